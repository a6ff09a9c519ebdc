//! Compiles `proto/urlfrontier.proto` (crawler-commons/url-frontier's API, copied
//! verbatim) into the gRPC server's Rust types: protox parses it (pure Rust, no
//! `protoc` binary needed at build time) and tonic-prost-build writes the code.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/urlfrontier.proto");
    let fds = protox::compile(["proto/urlfrontier.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
