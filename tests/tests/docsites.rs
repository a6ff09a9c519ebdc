//! Real documentation sites crawled whole with the defaults (issue 37, Done-when 1,
//! the suite's set): `ops/docsites.sh --set small` serves six Debian documentation
//! packages (git, Sphinx, the Debian handbook, reference, developers' reference and
//! new maintainers' guide: about 560 URLs) with nginx, each site a seed, and runs
//! `polycrawl crawl` with the documented defaults (politeness off, loopback
//! allowed). The judge is independent of polycrawl: an html5lib link oracle
//! (`ops/link_oracle.py`) walks the files from the seeds, and nginx's access log
//! says what was fetched. Every URL the oracle reaches is fetched, nothing else,
//! nothing twice, and the crawl calls itself `Complete`. The full set (12 sites,
//! the largest about 3,900 pages) is the benchmark `ops/docsites.sh` (BENCHMARKS.md).

use std::process::Command;

/// The figures line of `link_oracle.py compare`: `expected=N fetched=N ...`.
fn figure(out: &str, name: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.contains(" expected="))
        .unwrap_or_else(|| panic!("no figures line in:\n{out}"));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {line}"))
}

#[test]
fn documentation_sites_are_crawled_whole_with_the_defaults() {
    let work = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../ops/docsites.sh");
    let output = Command::new(script)
        .args(["--set", "small", "--timeout-s", "300"])
        .arg("--bin")
        .arg(tests::bin::polycrawl())
        .arg("--work")
        .arg(work.path().join("run"))
        .output()
        .expect("running ops/docsites.sh");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{out}");
    let expected = figure(&out, "expected");
    assert!(
        expected >= 500,
        "the oracle reaches the sites' pages: {expected}"
    );
    assert_eq!(figure(&out, "fetched"), expected, "{out}");
    assert_eq!(figure(&out, "requests"), expected, "each once: {out}");
    for name in ["missing", "extra", "duplicate"] {
        assert_eq!(figure(&out, name), 0, "{name}: {out}");
    }
    assert!(
        out.contains("app bfs: Complete: "),
        "the crawl calls itself complete: {out}"
    );
    assert!(output.status.success(), "{out}");
}
