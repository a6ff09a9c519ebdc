//! [`Layout`]: where a run of `polycrawl crawl` or `polycrawl demo` keeps its files,
//! all under one output directory (config, admin token, pids, spools, states,
//! repositories, logs), and the writing of its secret and config files.
//!
//! This module only names paths and writes the run's own small files; it must
//! never start a process or read a crawl's data.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Config;

/// Where a run keeps its files, all under one output directory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The output directory (absolute).
    pub out: PathBuf,
    /// The generated config, `<out>/config.ron`.
    pub config: PathBuf,
    /// The spool, `<out>/spool`.
    pub spool: PathBuf,
    /// The manager's state, `<out>/state/manager`.
    pub manager_state: PathBuf,
    /// The application's state, `<out>/state/app`.
    pub app_state: PathBuf,
    /// The WARC repository, `<out>/repository`.
    pub repository: PathBuf,
    /// Every process's stderr and stdout, `<out>/logs`.
    pub logs: PathBuf,
    /// The run's admin token (readable by the owner only), `<out>/admin-token`.
    pub admin_token: PathBuf,
    /// The running children, `NAME PID` a line, `<out>/pids`.
    pub pids: PathBuf,
}

impl Layout {
    /// The layout under `out` (made absolute).
    pub fn new(out: &Path) -> anyhow::Result<Layout> {
        let out =
            std::path::absolute(out).with_context(|| format!("resolving {}", out.display()))?;
        Ok(Layout {
            config: out.join("config.ron"),
            spool: out.join("spool"),
            manager_state: out.join("state").join("manager"),
            app_state: out.join("state").join("app"),
            repository: out.join("repository"),
            logs: out.join("logs"),
            admin_token: out.join("admin-token"),
            pids: out.join("pids"),
            out,
        })
    }

    /// Creates the folders.
    pub fn create(&self) -> anyhow::Result<()> {
        for dir in [
            &self.spool,
            &self.manager_state,
            &self.app_state,
            &self.repository,
            &self.logs,
        ] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(())
    }

    /// The spool of crawling system `s` (`<out>/spool` for the first, then
    /// `<out>/spool-s<S>`): each system's manager, resolver and downloaders share
    /// one spool; parts exchange URLs through the first one's `exchange/`.
    pub fn spool_of(&self, s: u32) -> PathBuf {
        if s == 0 {
            self.spool.clone()
        } else {
            self.spool.with_file_name(format!("spool-s{s}"))
        }
    }

    /// The same layout with the spools in `<out>/export` (the directory the
    /// simulated machines of `demo --machines` mount) instead of `<out>`.
    #[must_use]
    pub fn with_export(mut self) -> Layout {
        self.spool = self.export().join("spool");
        self
    }

    /// `<out>/export`: the spools' directory with `--machines`.
    pub fn export(&self) -> PathBuf {
        self.out.join("export")
    }

    /// The manager state of system `s`.
    pub fn manager_state_of(&self, s: u32) -> PathBuf {
        if s == 0 {
            self.manager_state.clone()
        } else {
            self.out.join("state").join(format!("manager-s{s}"))
        }
    }

    /// The state directory of part `i` of `parts` (`<out>/state/app` unsplit).
    pub fn app_state_of(&self, i: u32, parts: u32) -> PathBuf {
        if parts <= 1 {
            self.app_state.clone()
        } else {
            self.out.join("state").join(format!("app-p{i}"))
        }
    }

    /// The repository of part `i` of `parts` (`<out>/repository` unsplit).
    pub fn repository_of(&self, i: u32, parts: u32) -> PathBuf {
        if parts <= 1 {
            self.repository.clone()
        } else {
            self.out.join(format!("repository-p{i}"))
        }
    }

    /// Every part's repository.
    pub fn repositories(&self, parts: u32) -> Vec<PathBuf> {
        (0..parts.max(1))
            .map(|i| self.repository_of(i, parts))
            .collect()
    }

    /// Points the config's directories at this layout. Every process of the run
    /// sees the spool through this machine's file system, so the application's
    /// "idle" verdict needs no confirmation delay (`app.idle_check_ms = 0`).
    pub fn apply(&self, config: &mut Config) {
        config.app.idle_check_ms = 0;
        config.spool.root = self.spool.clone();
        config.manager.state_dir = self.manager_state.clone();
        config.app.state_dir = self.app_state.clone();
        config.app.repository_dir = self.repository.clone();
        config.app.exchange_root = Some(self.spool.clone());
    }
}

/// Writes `token` to `path`, readable and writable by the owner only.
pub(crate) fn write_secret(path: &Path, token: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(file, "{token}").with_context(|| format!("writing {}", path.display()))
}

/// A random secret: 32 hex digits from the kernel's generator.
pub fn random_token() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `config` as RON, with a comment saying where it came from.
pub fn write_config(path: &Path, config: &Config, origin: &str) -> anyhow::Result<()> {
    let pretty = ron::ser::PrettyConfig::default();
    let body = ron::ser::to_string_pretty(config, pretty).context("writing the config as RON")?;
    let text = format!(
        "// Written by {origin}; every process of the run reads it. Tokens are not\n\
         // here: they go to the processes in POLYCRAWL_TOKEN / POLYCRAWL_ADMIN_TOKEN.\n{body}\n"
    );
    // Check it reads back exactly as the processes will read it.
    let back = Config::parse(&text, &path.display().to_string())
        .context("the generated config does not read back")?;
    anyhow::ensure!(
        &back == config,
        "the generated config does not read back unchanged"
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_for_the_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin-token");
        write_secret(&path, "abc").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "abc\n");
    }

    #[test]
    fn tokens_are_random_hex() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn generated_config_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path()).unwrap();
        let mut config = Config::default();
        layout.apply(&mut config);
        config.downloader.extra_ca_file = Some(dir.path().join("ca.pem"));
        config.resolver.name_servers = vec!["127.0.0.1:5353".parse().unwrap()];
        write_config(&layout.config, &config, "a test").unwrap();
        assert_eq!(Config::load(&layout.config).unwrap(), config);
    }
}
