//! The tools' subcommands: `polycrawl get`, `wacz`, `links`, `robots`, `status`
//! and `config`: each reads files (a repository, an HTML page, a robots.txt, a
//! config) or asks a running manager, and prints the answer.
//!
//! This module must never write into a repository or a crawl's state.

use std::path::PathBuf;

use anyhow::Context;

use crate::config::{Config, DEFAULT_RON};

#[derive(Debug, clap::Args)]
pub(super) struct GetArgs {
    /// The WARC repository.
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The URL to print.
    #[arg(value_name = "URL")]
    url: String,
}

#[derive(Debug, clap::Args)]
pub(super) struct WaczArgs {
    /// The WARC repository (of a crawl that has stopped).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The WACZ file to write (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The collection's title. Default: the repository's folder name.
    #[arg(long)]
    title: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(super) struct LinksArgs {
    /// The URL the page was fetched from (relative links resolve against it).
    #[arg(long, value_name = "URL")]
    base: String,
    /// The response's Content-Type header (its charset decides the encoding).
    #[arg(long, value_name = "TYPE")]
    content_type: Option<String>,
    /// The crawl's config file: its app section's canonicalization and body cap
    /// apply [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The HTML file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

#[derive(Debug, clap::Args)]
pub(super) struct RobotsArgs {
    /// The crawler's product token [default: the config's `manager.frontier.robots_agent`].
    #[arg(long)]
    agent: Option<String>,
    /// The crawl's config file: its robots agent and URL canonicalization apply
    /// [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The HTTP status the robots.txt came with (4xx allows all, 5xx disallows all).
    #[arg(long, default_value_t = 200)]
    status: u16,
    /// The robots.txt file to check against.
    #[arg(long, value_name = "FILE")]
    robots: PathBuf,
    /// URLs (or paths) to check.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub(super) struct StatusArgs {
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The manager's control port, overriding control.manager_addr.
    #[arg(long, value_name = "HOST:PORT")]
    manager: Option<String>,
    /// The admin token, overriding POLYCRAWL_ADMIN_TOKEN and manager.admin_token
    /// (without any, the control token: POLYCRAWL_TOKEN or control.token).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(super) struct ConfigArgs {
    /// Print the default config with every field documented.
    #[arg(long)]
    default: bool,
    /// Parse and validate FILE; print the effective config.
    #[arg(long, value_name = "FILE")]
    check: Option<PathBuf>,
}

/// `polycrawl status`: prints a running manager's figures.
pub(super) fn status_command(args: StatusArgs) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let token = [
        args.token,
        std::env::var("POLYCRAWL_ADMIN_TOKEN").ok(),
        Some(config.manager.admin_token.clone()),
        std::env::var("POLYCRAWL_TOKEN").ok(),
        Some(config.control.token.clone()),
    ]
    .into_iter()
    .flatten()
    .find(|t| !t.is_empty())
    .context("no token: set --token, POLYCRAWL_ADMIN_TOKEN or manager.admin_token")?;
    let token = spool::protocol::Token::new(token).context("admin token")?;
    let addr = args
        .manager
        .unwrap_or_else(|| config.control.manager_addr.clone());
    let runtime = tokio::runtime::Runtime::new()?;
    let snapshot = runtime.block_on(crate::status::fetch(
        &addr,
        token,
        config.control.max_frame_bytes,
    ))?;
    print!("{}", crate::status::render(&addr, &snapshot));
    Ok(())
}

/// `polycrawl robots`: the manager's decision for each URL. The robots.txt becomes a
/// policy as the manager makes it from a fetch (`RobotsPolicy::from_fetch`); an
/// absolute URL is canonicalized as the app would before queueing it (a URL the
/// app rejects is printed as `rejected`), then matched by its path and query as the
/// frontier does.
pub(super) fn robots_command(args: RobotsArgs) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let body = std::fs::read(&args.robots)
        .with_context(|| format!("cannot read {}", args.robots.display()))?;
    let agent = args.agent.unwrap_or(config.manager.frontier.robots_agent);
    let policy = manager::robots::RobotsPolicy::from_fetch(args.status, &body, &agent);
    let canon = config.app.canon();
    for url in &args.urls {
        let target = match url::Url::parse(url) {
            Ok(parsed) => match pages::canon::canonicalize(parsed, &canon) {
                Ok(canonical) => canonical.to_string(),
                Err(why) => {
                    println!("rejected\t{url}\t{why}");
                    continue;
                }
            },
            // A path, or a URL without a scheme: matched as written.
            Err(_) => url.clone(),
        };
        let allowed = policy.is_allowed(&manager::robots::path_and_query(&target));
        let verdict = if allowed { "allowed" } else { "disallowed" };
        println!("{verdict}\t{url}");
    }
    Ok(())
}

/// `polycrawl get`: a stored page, WARC headers and HTTP response.
pub(super) fn get_command(args: GetArgs) -> anyhow::Result<()> {
    let repo = storage::RepositoryReader::open(&args.repo)?;
    let found = storage::print_page(&repo, &args.url, &mut std::io::stdout().lock())?;
    anyhow::ensure!(found, "{} is not in the repository", args.url);
    Ok(())
}

/// `polycrawl wacz`: the repository as one WACZ file; one summary line.
pub(super) fn wacz_command(args: WaczArgs) -> anyhow::Result<()> {
    let repo = storage::RepositoryReader::open(&args.repo)?;
    let title = args.title.unwrap_or_else(|| {
        let name = args
            .repo
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        name.unwrap_or_else(|| "polycrawl".to_owned())
    });
    let s = storage::write_wacz(&repo, &args.out, &title)?;
    println!(
        "wacz {}: {} WARC files, {} index lines, {} pages, {} bytes",
        args.out.display(),
        s.warcs,
        s.index_lines,
        s.pages,
        s.bytes
    );
    Ok(())
}

/// `polycrawl links`: the canonical links the application would follow.
pub(super) fn links_command(args: LinksArgs) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let base = url::Url::parse(&args.base)
        .with_context(|| format!("--base {:?} is not an absolute URL", args.base))?;
    let html = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let links = pages::links_for_file(&html, &base, args.content_type.as_deref(), &config.app);
    for link in links {
        println!("{link}");
    }
    Ok(())
}

/// `polycrawl config`: the documented defaults, or a file checked and printed.
pub(super) fn config_command(args: ConfigArgs) -> anyhow::Result<()> {
    if args.default {
        print!("{DEFAULT_RON}");
    } else if let Some(path) = args.check {
        let config = Config::load(&path)?;
        println!("{config:#?}");
    }
    Ok(())
}
