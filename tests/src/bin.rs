//! Where the `polycrawl` binary is, and making sure it is built and current.
//!
//! `CARGO_BIN_EXE_polycrawl` exists only inside the `polycrawl` package, which the tests
//! do not depend on (a dependency would build only its library anyway). So
//! [`polycrawl()`] looks next to the test's own executable (a test binary lives in
//! `<target>/<profile>/deps/`, cargo puts `polycrawl` in `<target>/<profile>/`)
//! and, once per test process,
//! runs `$CARGO build -p polycrawl --bin polycrawl` for that same target directory and
//! profile first, so a test never runs a stale binary. `cargo test` has released
//! its build lock when tests run, so this does not deadlock; when nothing changed it
//! costs well under a second.
//!
//! [`artifacts_dir`] is where tests leave files for people to look at
//! (`<target>/test-artifacts/`, e.g. the admin page's screenshot).
//!
//! That build runs without the variables cargo sets for the test itself
//! (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...: `is_crate_variable`): some build
//! scripts ask to run again when one of those changes (ring's, through its
//! `rerun-if-env-changed` list), so passing the test's own values on rebuilt ring
//! and everything above it (rustls, the downloader, websim, polycrawl) at the first
//! test of every run, and again at the next build from a shell: 112 s of a CI run.
//!
//! Overrides: `POLYCRAWL_BIN=/path` uses that binary and builds nothing;
//! `POLYCRAWL_NO_BUILD=1` skips the build (the binary must exist). Without `CARGO`
//! in the environment (a test binary run by hand) nothing is built either.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `polycrawl` binary the tests run (built or rebuilt on first call).
///
/// # Panics
/// If the build fails or the binary is missing, with cargo's output or a hint.
pub fn polycrawl() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(locate_and_build).clone()
}

fn locate_and_build() -> PathBuf {
    if let Some(p) = std::env::var_os("POLYCRAWL_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // <target>/<profile>/deps/<test-exe> -> <target>/<profile>/polycrawl
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable is in <target>/<profile>/deps");
    let bin = profile_dir.join("polycrawl");
    let cargo = std::env::var_os("CARGO");
    if let (Some(cargo), None) = (cargo, std::env::var_os("POLYCRAWL_NO_BUILD")) {
        let target_dir = profile_dir.parent().expect("<target>/<profile>");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("debug");
        let mut cmd = Command::new(cargo);
        for (key, _) in std::env::vars_os() {
            if key.to_str().is_some_and(is_crate_variable) {
                cmd.env_remove(&key);
            }
        }
        cmd.args([
            "build",
            "-p",
            "polycrawl",
            "--bin",
            "polycrawl",
            "--target-dir",
        ]);
        cmd.arg(target_dir);
        match profile {
            "release" => {
                cmd.arg("--release");
            }
            "debug" => {}
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let out = cmd.output().expect("running cargo build for polycrawl");
        assert!(
            out.status.success(),
            "building polycrawl failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        bin.exists(),
        "{} does not exist: build it with `cargo build --release -p polycrawl` (same target \
         directory and profile as the tests), or set POLYCRAWL_BIN",
        bin.display()
    );
    bin
}

/// Whether `name` is one of the variables cargo sets for a crate it compiles or a
/// test it runs (see the [module docs](self)); cargo's own settings
/// (`CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_INCREMENTAL`, ...) are not.
fn is_crate_variable(name: &str) -> bool {
    const PREFIXES: [&str; 3] = ["CARGO_PKG_", "CARGO_BIN_EXE_", "CARGO_CFG_"];
    const NAMES: [&str; 9] = [
        "OUT_DIR",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// `<target>/test-artifacts/` (created): files a test leaves for people to look at.
/// The target dir is the one the test executable was built in
/// (`<target>/<profile>/deps/<test-exe>`).
///
/// # Panics
/// If the folder cannot be created.
pub fn artifacts_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the test executable is in <target>/<profile>/deps");
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

#[cfg(test)]
mod tests {
    use super::is_crate_variable;

    #[test]
    fn the_tests_own_cargo_variables_are_dropped_and_cargos_settings_kept() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_EXE_polycrawl",
            "OUT_DIR",
        ] {
            assert!(is_crate_variable(name), "{name}");
        }
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "CARGO_PROFILE_RELEASE_LTO",
            "PATH",
        ] {
            assert!(!is_crate_variable(name), "{name}");
        }
    }
}
