//! The house rules of issue 30, checked over the workspace's shipping code (every
//! crate but `tests` and `fuzzing`; `#[cfg(test)]` modules and `#[test]` functions
//! aside):
//!
//! - a type that owns behaviour (an inherent method taking `self`) has at most 12
//!   fields, unless it is a plain serialized record or a config (derives `Serialize`,
//!   `Deserialize`, `Parser` or `Args`);
//! - the `impl` blocks of one type sit in at most 4 files;
//! - a function (free, inherent, trait) is at most 100 lines, attributes and doc
//!   comments not counted;
//! - an `impl` block is at most 300 lines: a type whose behaviour fills more is
//!   two types, not one type regrouped into files;
//! - a crate holds at most 10,000 lines of shipping code (a file's lines less its
//!   test items): a crate that grows past it holds more than one concept;
//! - a crate's `[dependencies]` name only the workspace crates its layer may use
//!   ([`MAY_USE`]): the services never each other, an application only the
//!   application core and the page libraries, nothing shipping `test-support`;
//! - no import cycle between files of different concepts, a concept being a folder
//!   (`x.rs`, `x/mod.rs` and `x/*.rs` are one concept) or a file directly in `src/`.
//!   Imports are `use` items;
//!   re-exports (`pub use`) are followed to the file that defines the item.
//!
//! What is left on purpose is listed, each with its reason, in `ops/house/allow.txt`;
//! anything else fails the check, and so does an allowance that no longer matches.
//! Usage: `house WORKSPACE_ROOT` (run by `ops/check-house.sh`).
//!
//! This tool reads source text only; it must never build, run or change the code it
//! checks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use syn::spanned::Spanned;
use syn::{Attribute, Fields, Item, ItemImpl, UseTree, Visibility};

const MAX_FIELDS: usize = 12;
const MAX_IMPL_FILES: usize = 4;
const MAX_FN_LINES: usize = 100;
const MAX_IMPL_LINES: usize = 300;
const MAX_CRATE_LINES: usize = 10_000;
const SHIPPING: &[&str] = &[
    "spool",
    "manager",
    "downloader",
    "resolver",
    "pages",
    "seen",
    "app-core",
    "app-bfs",
    "app-seeds",
    "coordinator",
    "offline",
    "storage",
    "websim",
    "nfsim",
    "urlfrontier",
    "polycrawl",
    "bench",
];

/// The workspace crates each shipping crate may name under `[dependencies]`
/// (dev-dependencies are the tests' business). Any other workspace crate named
/// there, `test-support` above all, is a finding.
const MAY_USE: &[(&str, &[&str])] = &[
    ("spool", &[]),
    ("storage", &["spool"]),
    ("manager", &["spool"]),
    ("downloader", &["spool"]),
    ("resolver", &["spool"]),
    ("websim", &["spool"]),
    ("nfsim", &[]),
    ("pages", &["spool", "storage"]),
    ("seen", &["spool"]),
    ("app-core", &["spool", "storage", "pages", "seen"]),
    ("app-bfs", &["spool", "storage", "pages", "seen", "app-core"]),
    ("app-seeds", &["spool", "storage", "pages", "seen", "app-core"]),
    ("coordinator", &["spool", "seen", "app-core"]),
    ("offline", &["spool", "storage", "pages", "app-core"]),
    // The URL Frontier service is an application and a downloader to the manager at
    // once: the seen set for its URLs, the downloader's library for robots.txt.
    ("urlfrontier", &["spool", "seen", "downloader"]),
    (
        "polycrawl",
        &[
            "spool",
            "storage",
            "manager",
            "downloader",
            "resolver",
            "websim",
            "pages",
            "app-core",
            "app-bfs",
            "app-seeds",
            "coordinator",
            "offline",
            "nfsim",
            "urlfrontier",
        ],
    ),
    ("bench", &["spool", "storage", "websim", "pages", "polycrawl"]),
];

fn main() -> ExitCode {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    match run(&root) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("house: {e}");
            ExitCode::from(2)
        }
    }
}

/// One module of one crate root.
struct Module {
    file: PathBuf,
    /// Child modules by name: their absolute module path.
    children: BTreeSet<String>,
    /// Names defined here (items), for resolving `use` paths.
    defines: BTreeSet<String>,
    /// `pub use` re-exports: name -> absolute path; and glob re-export sources.
    reexports: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    /// `use` paths (absolute, crate-relative) of this module.
    uses: Vec<Vec<String>>,
}

#[derive(Default)]
struct TypeFacts {
    fields: Option<(usize, String, bool)>,
    impl_files: BTreeSet<String>,
    has_methods: bool,
}

struct Crate {
    name: String,
    modules: BTreeMap<Vec<String>, Module>,
    types: BTreeMap<String, TypeFacts>,
    fns: Vec<(String, usize, String)>,
    /// Inherent and trait impl blocks: (type, lines, file:line).
    impls: Vec<(String, usize, String)>,
    /// Lines of shipping code: every loaded file's lines less its test items'.
    lines: usize,
}

fn run(root: &Path) -> Result<bool, String> {
    let mut findings: Vec<(String, String)> = Vec::new();
    for name in SHIPPING {
        let src = root.join(name).join("src");
        let mut roots = Vec::new();
        for f in ["lib.rs", "main.rs"] {
            if src.join(f).exists() {
                roots.push((src.join(f), f.trim_end_matches(".rs").to_string()));
            }
        }
        if let Ok(dir) = fs::read_dir(src.join("bin")) {
            for e in dir.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "rs") {
                    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
                    roots.push((p, format!("bin/{}", stem.unwrap_or_default())));
                }
            }
        }
        for (file, tag) in roots {
            let label = if tag == "lib" {
                name.to_string()
            } else {
                format!("{name}[{tag}]")
            };
            let mut krate = Crate {
                name: label,
                modules: BTreeMap::new(),
                types: BTreeMap::new(),
                fns: Vec::new(),
                impls: Vec::new(),
                lines: 0,
            };
            load(root, &mut krate, &file, vec![], true)?;
            check(root, &krate, &mut findings);
        }
        check_deps(root, name, &mut findings)?;
    }
    findings.sort();
    findings.dedup();
    let allow_path = root.join("ops/house/allow.txt");
    let allow_text = fs::read_to_string(&allow_path).unwrap_or_default();
    let mut allowed: BTreeMap<String, bool> = BTreeMap::new();
    for line in allow_text.lines() {
        let key = line.split('#').next().unwrap_or("").trim();
        if !key.is_empty() {
            allowed.insert(key.to_string(), false);
        }
    }
    let mut failed = 0;
    for (key, detail) in &findings {
        match allowed.get_mut(key) {
            Some(seen) => {
                *seen = true;
                println!("allowed  {key}: {detail}");
            }
            None => {
                failed += 1;
                println!("BREAKS   {key}: {detail}");
            }
        }
    }
    let stale: Vec<_> = allowed
        .iter()
        .filter(|(_, s)| !**s)
        .map(|(k, _)| k)
        .collect();
    for key in &stale {
        println!("STALE    {key}: allowed in ops/house/allow.txt but no longer found");
    }
    println!(
        "house: {} findings, {} allowed, {} breaking, {} stale allowances",
        findings.len(),
        findings.len() - failed,
        failed,
        stale.len()
    );
    let sleeps_ok = check_sleeps(root)?;
    Ok(failed == 0 && stale.is_empty() && sleeps_ok)
}

fn is_test_attr(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        let p = a.path();
        if p.is_ident("test") {
            return true;
        }
        if p.is_ident("cfg") {
            let text = a
                .meta
                .require_list()
                .map(|l| l.tokens.to_string())
                .unwrap_or_default();
            return text.trim() == "test" || text.starts_with("all (test");
        }
        p.segments.last().is_some_and(|s| s.ident == "test")
    })
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| {
            let nv = a.meta.require_name_value().ok()?;
            match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            }
        })
}

fn derives(attrs: &[Attribute]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = a.parse_nested_meta(|m| {
            if let Some(last) = m.path.segments.last() {
                out.insert(last.ident.to_string());
            }
            Ok(())
        });
    }
    out
}

/// Lines of an item from its signature to its closing brace (attributes and doc
/// comments, which syn counts in the span, left out).
fn body_lines(start: proc_macro2::Span, end: proc_macro2::Span) -> usize {
    end.end().line.saturating_sub(start.start().line) + 1
}

fn load(
    root: &Path,
    krate: &mut Crate,
    file: &Path,
    path: Vec<String>,
    dir_owner: bool,
) -> Result<(), String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    krate.lines += text.lines().count().saturating_sub(test_lines(&ast.items));
    // Child module files live in `<dir of file>/` for mod.rs/lib.rs/main.rs, else
    // in `<dir of file>/<stem>/`.
    let base = if dir_owner {
        file.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
        file.parent()
            .map(|p| p.join(stem.unwrap_or_default()))
            .unwrap_or_default()
    };
    let rel = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    load_items(root, krate, file, &rel, &base, path, &ast.items)
}

fn load_items(
    root: &Path,
    krate: &mut Crate,
    file: &Path,
    rel: &str,
    base: &Path,
    path: Vec<String>,
    items: &[Item],
) -> Result<(), String> {
    krate.modules.insert(
        path.clone(),
        Module {
            file: file.to_path_buf(),
            children: BTreeSet::new(),
            defines: BTreeSet::new(),
            reexports: BTreeMap::new(),
            globs: Vec::new(),
            uses: Vec::new(),
        },
    );
    let mut children = Vec::new();
    for item in items {
        match item {
            Item::Mod(m) if !is_test_attr(&m.attrs) => {
                let name = m.ident.to_string();
                let mut child = path.clone();
                child.push(name.clone());
                children.push(name.clone());
                if let Some((_, inner)) = &m.content {
                    load_items(root, krate, file, rel, &base.join(&name), child, inner)?;
                } else {
                    let (target, owner) = if let Some(p) = path_attr(&m.attrs) {
                        (base.join(p), true)
                    } else if base.join(format!("{name}.rs")).exists() {
                        (base.join(format!("{name}.rs")), false)
                    } else {
                        (base.join(&name).join("mod.rs"), true)
                    };
                    load(root, krate, &target, child, owner)?;
                }
            }
            Item::Struct(s) if !is_test_attr(&s.attrs) => {
                let name = s.ident.to_string();
                let n = match &s.fields {
                    Fields::Named(f) => f.named.len(),
                    Fields::Unnamed(f) => f.unnamed.len(),
                    Fields::Unit => 0,
                };
                let d = derives(&s.attrs);
                let record = ["Serialize", "Deserialize", "Parser", "Args"]
                    .iter()
                    .any(|x| d.contains(*x));
                let at = format!("{rel}:{}", s.ident.span().start().line);
                krate.types.entry(name.clone()).or_default().fields = Some((n, at, record));
                define(krate, &path, name);
            }
            Item::Impl(i) if !is_test_attr(&i.attrs) => impl_facts(krate, rel, i),
            Item::Fn(f) if !is_test_attr(&f.attrs) => {
                let lines = body_lines(f.sig.span(), f.block.span());
                let at = format!("{rel}:{}", f.sig.ident.span().start().line);
                let name = qualified(&path, &f.sig.ident.to_string());
                krate.fns.push((name, lines, at));
                define(krate, &path, f.sig.ident.to_string());
            }
            Item::Trait(t) if !is_test_attr(&t.attrs) => {
                for ti in &t.items {
                    if let syn::TraitItem::Fn(f) = ti
                        && let Some(block) = &f.default
                    {
                        let lines = body_lines(f.sig.span(), block.span());
                        let at = format!("{rel}:{}", f.sig.ident.span().start().line);
                        krate
                            .fns
                            .push((format!("{}::{}", t.ident, f.sig.ident), lines, at));
                    }
                }
                define(krate, &path, t.ident.to_string());
            }
            Item::Enum(e) => define(krate, &path, e.ident.to_string()),
            Item::Type(t) => define(krate, &path, t.ident.to_string()),
            Item::Const(c) => define(krate, &path, c.ident.to_string()),
            Item::Static(s) => define(krate, &path, s.ident.to_string()),
            Item::Macro(m) => {
                if let Some(i) = &m.ident {
                    define(krate, &path, i.to_string());
                }
            }
            Item::Use(u) if !is_test_attr(&u.attrs) => {
                let public = !matches!(u.vis, Visibility::Inherited);
                let mut flat = Vec::new();
                flatten(&u.tree, &mut Vec::new(), &mut flat);
                for (segs, alias) in flat {
                    let Some(abs) = absolute(&path, &segs, krate, &children) else {
                        continue;
                    };
                    let Some(m) = krate.modules.get_mut(&path) else {
                        continue;
                    };
                    if public {
                        match &alias {
                            Some(a) if a == "*" => m.globs.push(abs.clone()),
                            Some(a) => {
                                m.reexports.insert(a.clone(), abs.clone());
                            }
                            None => {}
                        }
                    }
                    m.uses.push(abs);
                }
            }
            _ => {}
        }
    }
    if let Some(m) = krate.modules.get_mut(&path) {
        m.children.extend(children);
    }
    Ok(())
}

fn define(krate: &mut Crate, path: &[String], name: String) {
    if let Some(m) = krate.modules.get_mut(path) {
        m.defines.insert(name);
    }
}

fn qualified(path: &[String], name: &str) -> String {
    let mut s = path.join("::");
    if !s.is_empty() {
        s.push_str("::");
    }
    s.push_str(name);
    s
}

/// Lines of the test items (`#[cfg(test)]` modules, `#[test]` functions) among
/// `items`, inline test modules' contents included.
fn test_lines(items: &[Item]) -> usize {
    let mut n = 0;
    for item in items {
        let (attrs, span) = match item {
            Item::Mod(m) => (&m.attrs, m.span()),
            Item::Fn(f) => (&f.attrs, f.span()),
            Item::Impl(i) => (&i.attrs, i.span()),
            Item::Use(u) => (&u.attrs, u.span()),
            Item::Struct(s) => (&s.attrs, s.span()),
            _ => continue,
        };
        if is_test_attr(attrs) {
            n += body_lines(span, span);
        } else if let Item::Mod(m) = item
            && let Some((_, inner)) = &m.content
        {
            n += test_lines(inner);
        }
    }
    n
}

fn impl_facts(krate: &mut Crate, rel: &str, i: &ItemImpl) {
    let syn::Type::Path(tp) = &*i.self_ty else {
        return;
    };
    let Some(last) = tp.path.segments.last() else {
        return;
    };
    let ty = last.ident.to_string();
    let at = format!("{rel}:{}", last.ident.span().start().line);
    let block = i.items.iter().filter(|item| match item {
        syn::ImplItem::Fn(f) => !is_test_attr(&f.attrs),
        _ => true,
    });
    let lines: usize = block
        .map(|item| body_lines(item.span(), item.span()))
        .sum();
    krate.impls.push((ty.clone(), lines, at));
    let facts = krate.types.entry(ty.clone()).or_default();
    facts.impl_files.insert(rel.to_string());
    for item in &i.items {
        if let syn::ImplItem::Fn(f) = item {
            if is_test_attr(&f.attrs) {
                continue;
            }
            if i.trait_.is_none() && f.sig.receiver().is_some() {
                facts.has_methods = true;
            }
            let lines = body_lines(f.sig.span(), f.block.span());
            let at = format!("{rel}:{}", f.sig.ident.span().start().line);
            krate
                .fns
                .push((format!("{ty}::{}", f.sig.ident), lines, at));
        }
    }
}

/// The workspace crates named under `[dependencies]` of crate `name` that its
/// layer may not use ([`MAY_USE`]). Reads the manifest as text: a dependency is a
/// line `<name> = ...` or `<name>.workspace = ...` in that table.
fn check_deps(root: &Path, name: &str, findings: &mut Vec<(String, String)>) -> Result<(), String> {
    let manifest = root.join(name).join("Cargo.toml");
    let text = fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let workspace: BTreeSet<&str> = MAY_USE
        .iter()
        .map(|(c, _)| *c)
        .chain(["test-support", "tests", "fuzzing"])
        .collect();
    let allowed = MAY_USE
        .iter()
        .find(|(c, _)| *c == name)
        .map(|(_, a)| *a)
        .ok_or_else(|| format!("{name}: a shipping crate without a MAY_USE entry"))?;
    let mut table = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
            continue;
        }
        if table != "[dependencies]" {
            continue;
        }
        let dep = line
            .split(['=', '.', ' '])
            .next()
            .unwrap_or("")
            .trim();
        if workspace.contains(dep) && !allowed.contains(&dep) {
            findings.push((
                format!("deps {name} -> {dep}"),
                format!("{name} may use only {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

/// `use` trees as (segments, alias): alias is the name bound ("*" for a glob).
fn flatten(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let mut v = prefix.clone();
            let name = n.ident.to_string();
            if name == "self" {
                let alias = v.last().cloned();
                out.push((v, alias));
            } else {
                v.push(name.clone());
                out.push((v, Some(name)));
            }
        }
        UseTree::Rename(r) => {
            let mut v = prefix.clone();
            if r.ident != "self" {
                v.push(r.ident.to_string());
            }
            out.push((v, Some(r.rename.to_string())));
        }
        UseTree::Glob(_) => out.push((prefix.clone(), Some("*".into()))),
        UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix, out);
            }
        }
    }
}

/// A `use` path made absolute within the crate; None for other crates.
fn absolute(
    here: &[String],
    segs: &[String],
    _krate: &Crate,
    children: &[String],
) -> Option<Vec<String>> {
    let first = segs.first()?;
    let mut out: Vec<String>;
    let mut rest = &segs[1..];
    match first.as_str() {
        "crate" => out = vec![],
        "self" => out = here.to_vec(),
        "super" => {
            out = here.to_vec();
            out.pop();
            while rest.first().is_some_and(|s| s == "super") {
                out.pop();
                rest = &rest[1..];
            }
        }
        name if children.iter().any(|c| c == name) => {
            out = here.to_vec();
            rest = segs;
        }
        _ => return None,
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// The file that defines what `path` names, following re-exports.
fn resolve(krate: &Crate, path: &[String], depth: usize) -> Option<PathBuf> {
    let mut module: Vec<String> = vec![];
    let mut i = 0;
    while i < path.len() {
        let m = krate.modules.get(&module)?;
        let seg = &path[i];
        if m.children.contains(seg) {
            module.push(seg.clone());
            i += 1;
            continue;
        }
        if m.defines.contains(seg) || depth > 8 {
            return Some(m.file.clone());
        }
        if let Some(target) = m.reexports.get(seg) {
            let mut t = target.clone();
            t.extend(path[i + 1..].iter().cloned());
            return resolve(krate, &t, depth + 1).or_else(|| Some(m.file.clone()));
        }
        for g in &m.globs {
            let mut t = g.clone();
            t.extend(path[i..].iter().cloned());
            if let Some(target_mod) = krate.modules.get(g)
                && (target_mod.defines.contains(seg)
                    || target_mod.reexports.contains_key(seg)
                    || target_mod.children.contains(seg))
            {
                return resolve(krate, &t, depth + 1);
            }
        }
        return Some(m.file.clone());
    }
    krate.modules.get(&module).map(|m| m.file.clone())
}

/// The concept a file belongs to: a file directly in `src/` is its own concept
/// (with its folder, when `x.rs` sits beside `x/`); a file in a folder belongs to
/// that folder (`mod.rs` and `x.rs` beside `x/` to `x/`).
fn concept(file: &Path) -> PathBuf {
    let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem != "mod" && parent.join(&stem).is_dir() {
        return parent.join(stem);
    }
    if parent.file_name().is_some_and(|n| n == "src") && stem != "mod" {
        return parent.join(stem);
    }
    parent
}

fn check(root: &Path, krate: &Crate, findings: &mut Vec<(String, String)>) {
    let c = &krate.name;
    for (ty, f) in &krate.types {
        let Some((n, at, record)) = &f.fields else {
            continue;
        };
        if f.has_methods && !record && *n > MAX_FIELDS {
            findings.push((
                format!("fields {c}::{ty}"),
                format!("{n} fields (at most {MAX_FIELDS}), {at}"),
            ));
        }
        if f.impl_files.len() > MAX_IMPL_FILES {
            let files: Vec<_> = f.impl_files.iter().map(String::as_str).collect();
            findings.push((
                format!("impls {c}::{ty}"),
                format!(
                    "impl blocks in {} files (at most {MAX_IMPL_FILES}): {}",
                    files.len(),
                    files.join(" ")
                ),
            ));
        }
    }
    for (ty, lines, at) in &krate.impls {
        if *lines > MAX_IMPL_LINES {
            let file = at.split(':').next().unwrap_or("");
            findings.push((
                format!("impl {c}::{ty} {file}"),
                format!("an impl block of {lines} lines (at most {MAX_IMPL_LINES}), {at}"),
            ));
        }
    }
    if krate.lines > MAX_CRATE_LINES {
        findings.push((
            format!("crate {c}"),
            format!(
                "{} lines of shipping code (at most {MAX_CRATE_LINES})",
                krate.lines
            ),
        ));
    }
    for (name, lines, at) in &krate.fns {
        if *lines > MAX_FN_LINES {
            findings.push((
                format!("fn {c}::{name}"),
                format!("{lines} lines (at most {MAX_FN_LINES}), {at}"),
            ));
        }
    }
    // The concept graph (an edge for each `use` from a file of one concept to a file
    // of another) and its strongly connected components (Tarjan).
    let mut edges: HashMap<PathBuf, BTreeSet<PathBuf>> = HashMap::new();
    let mut why: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    let rel = |f: &Path| f.strip_prefix(root).unwrap_or(f).display().to_string();
    for m in krate.modules.values() {
        let from = concept(&m.file);
        edges.entry(from.clone()).or_default();
        for u in &m.uses {
            if let Some(to_file) = resolve(krate, u, 0) {
                let to = concept(&to_file);
                if to != from {
                    edges.entry(from.clone()).or_default().insert(to.clone());
                    why.entry((from.clone(), to)).or_default().insert(format!(
                        "{}->{}",
                        rel(&m.file),
                        rel(&to_file)
                    ));
                }
            }
        }
    }
    for scc in tarjan(&edges) {
        if scc.len() < 2 {
            continue;
        }
        let mut names: Vec<String> = scc.iter().map(|f| rel(f)).collect();
        names.sort();
        let mut imports = Vec::new();
        for a in &scc {
            for b in &scc {
                if let Some(w) = why.get(&(a.clone(), b.clone())) {
                    imports.extend(w.iter().cloned());
                }
            }
        }
        findings.push((
            format!("cycle {}", names.join(" ")),
            format!(
                "import cycle between {} concepts in {c}: {}",
                scc.len(),
                imports.join(" ")
            ),
        ));
    }
}

fn tarjan(edges: &HashMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a HashMap<PathBuf, BTreeSet<PathBuf>>,
        index: HashMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, (s.next, s.next));
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        if let Some(ws) = s.edges.get(v) {
            for w in ws {
                let Some((w_key, _)) = s.edges.get_key_value(w) else {
                    continue;
                };
                if !s.index.contains_key(w_key) {
                    visit(s, w_key);
                    let low_w = s.index[w_key].1;
                    let e = s.index.get_mut(v).expect("visited");
                    e.1 = e.1.min(low_w);
                } else if s.on.contains(w_key) {
                    let idx_w = s.index[w_key].0;
                    let e = s.index.get_mut(v).expect("visited");
                    e.1 = e.1.min(idx_w);
                }
            }
        }
        let (idx, low) = s.index[v];
        if idx == low {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        edges,
        index: HashMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let mut keys: Vec<&PathBuf> = edges.keys().collect();
    keys.sort();
    for k in keys {
        if !s.index.contains_key(k) {
            visit(&mut s, k);
        }
    }
    s.out
}

/// The most sleep calls test code may hold (issue 40).
const MAX_SLEEPS: usize = 30;

/// Issue 40's sleep check: every sleep call in test code is listed, with its reason,
/// in `ops/house/sleeps.txt` (one line per call, `path:fn # reason`), and the list
/// holds at most [`MAX_SLEEPS`] lines. Fails on a call not listed (or more calls in a
/// function than lines for it), on a line that no longer matches a call, and on a
/// list too long.
///
/// Test code: every file under `tests/` of the `tests` package (its library, its
/// integration tests, `tests/support`), every file under `<crate>/tests/` of the
/// other crates, and in their `src` (the module tree from `lib.rs`, `main.rs` and
/// `bin/*.rs`) the items under a `#[cfg(test)]` module or a test function
/// (`#[test]`, `#[tokio::test]`); benches and shipping code are not.
///
/// A sleep call: a call of a function or method named `sleep` or `sleep_until`
/// (`std::thread::sleep`, `tokio::time::sleep`, `sleep_until`, however imported), and
/// of a wrapper: a function of test code whose whole body is one sleep call (its
/// calls are matched by name). Macro bodies (`tokio::select!`, `assert!`) are not
/// parsed by syn: their tokens are scanned for such a name followed by parentheses.
/// A call is keyed by its file and the function around it (`Type::method` inside an
/// `impl`), so the key survives edits; a closure or async block counts in its
/// function. The poll loops of `test_support::wait` are calls like any other: a test
/// that waits with them adds none.
fn check_sleeps(root: &Path) -> Result<bool, String> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let tests_dir = dir.join("tests");
        if name.as_deref() == Some("tests") {
            // The `tests` package: its library, tests and `tests/support` are all
            // test code.
            sleeps_in_tree(root, &dir, &mut found)?;
            continue;
        }
        sleeps_in_tree(root, &tests_dir, &mut found)?;
        let src = dir.join("src");
        let mut crate_roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
            .iter()
            .map(|f| src.join(f))
            .filter(|p| p.is_file())
            .collect();
        crate_roots.extend(rs_files(&src.join("bin")));
        for file in crate_roots {
            sleeps_in_module(root, &file, true, false, &mut found)?;
        }
    }
    let list_path = root.join("ops/house/sleeps.txt");
    let list_text = fs::read_to_string(&list_path).unwrap_or_default();
    let mut listed: BTreeMap<String, usize> = BTreeMap::new();
    let mut lines = 0;
    for line in list_text.lines() {
        let key = line.split('#').next().unwrap_or("").trim();
        if !key.is_empty() {
            *listed.entry(key.to_string()).or_default() += 1;
            lines += 1;
        }
    }
    let mut bad = 0;
    let keys: BTreeSet<&String> = found.keys().chain(listed.keys()).collect();
    for key in keys {
        let calls = found.get(key).map_or(&[][..], Vec::as_slice);
        let n = listed.get(key).copied().unwrap_or(0);
        let at = calls.join(" ");
        if calls.len() > n {
            bad += 1;
            println!(
                "SLEEP    {key}: {} sleep calls, {n} listed in ops/house/sleeps.txt ({at})",
                calls.len()
            );
        } else if calls.len() < n {
            bad += 1;
            println!(
                "STALE    {key}: {n} listed in ops/house/sleeps.txt, {} sleep calls found{}",
                calls.len(),
                if at.is_empty() {
                    String::new()
                } else {
                    format!(" ({at})")
                }
            );
        }
    }
    let total: usize = found.values().map(Vec::len).sum();
    if lines > MAX_SLEEPS {
        bad += 1;
        println!("SLEEPS   ops/house/sleeps.txt lists {lines} sleep calls (at most {MAX_SLEEPS})");
    }
    println!(
        "sleeps: {total} sleep calls in test code, {lines} listed (at most {MAX_SLEEPS}), {bad} problems"
    );
    Ok(bad == 0)
}

/// The `.rs` files directly in `dir`, sorted (none if it does not exist).
fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Every `.rs` file under `dir` (test code throughout), `target` folders aside.
fn sleeps_in_tree(
    root: &Path,
    dir: &Path,
    found: &mut BTreeMap<String, Vec<String>>,
) -> Result<(), String> {
    for file in rs_files(dir) {
        sleeps_in_file(root, &file, true, found, &mut None)?;
    }
    let mut subdirs: Vec<PathBuf> = fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    subdirs.sort();
    for sub in subdirs {
        if sub.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        sleeps_in_tree(root, &sub, found)?;
    }
    Ok(())
}

/// One module file of a crate's `src` and its child module files; `in_test` once a
/// `#[cfg(test)]` module holds it.
fn sleeps_in_module(
    root: &Path,
    file: &Path,
    dir_owner: bool,
    in_test: bool,
    found: &mut BTreeMap<String, Vec<String>>,
) -> Result<(), String> {
    let mut children = Some(Vec::new());
    sleeps_in_file(root, file, in_test, found, &mut children)?;
    let base = if dir_owner {
        file.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
        file.parent()
            .map(|p| p.join(stem.unwrap_or_default()))
            .unwrap_or_default()
    };
    for (inline_path, name, path_attr, test) in children.unwrap_or_default() {
        let base = inline_path.iter().fold(base.clone(), |b, m| b.join(m));
        let (target, owner) = if let Some(p) = path_attr {
            (base.join(p), true)
        } else if base.join(format!("{name}.rs")).exists() {
            (base.join(format!("{name}.rs")), false)
        } else {
            (base.join(&name).join("mod.rs"), true)
        };
        if target.is_file() {
            sleeps_in_module(root, &target, owner, test, found)?;
        }
    }
    Ok(())
}

/// A child module declared without a body: (the inline modules around it, its name,
/// its `#[path]`, whether it is test code).
type ModDecl = (Vec<String>, String, Option<String>, bool);

/// The sleep calls of one file into `found`; with `children`, the module files it
/// declares are collected there.
fn sleeps_in_file(
    root: &Path,
    file: &Path,
    in_test: bool,
    found: &mut BTreeMap<String, Vec<String>>,
    children: &mut Option<Vec<ModDecl>>,
) -> Result<(), String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let rel = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut wrappers = BTreeSet::new();
    find_wrappers(&ast.items, &mut wrappers);
    let mut v = SleepVisitor {
        rel: &rel,
        in_test,
        fns: Vec::new(),
        types: Vec::new(),
        mods: Vec::new(),
        wrappers: &wrappers,
        found,
        children: children.as_mut(),
    };
    syn::visit::Visit::visit_file(&mut v, &ast);
    Ok(())
}

/// Functions whose whole body is one sleep call: wrappers, whose calls are sleeps.
fn find_wrappers(items: &[Item], out: &mut BTreeSet<String>) {
    for item in items {
        match item {
            Item::Fn(f) => {
                if let [syn::Stmt::Expr(e, _)] = f.block.stmts.as_slice()
                    && is_sleep_expr(e, &BTreeSet::new())
                {
                    out.insert(f.sig.ident.to_string());
                }
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    find_wrappers(inner, out);
                }
            }
            _ => {}
        }
    }
}

fn is_sleep_name(name: &str, wrappers: &BTreeSet<String>) -> bool {
    name == "sleep" || name == "sleep_until" || wrappers.contains(name)
}

/// A call of `sleep`, `sleep_until` or a wrapper, possibly awaited.
fn is_sleep_expr(e: &syn::Expr, wrappers: &BTreeSet<String>) -> bool {
    match e {
        syn::Expr::Await(a) => is_sleep_expr(&a.base, wrappers),
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| is_sleep_name(&s.ident.to_string(), wrappers)),
            _ => false,
        },
        syn::Expr::MethodCall(m) => is_sleep_name(&m.method.to_string(), wrappers),
        _ => false,
    }
}

struct SleepVisitor<'a> {
    rel: &'a str,
    in_test: bool,
    /// Names of the functions around the visited node, outermost first.
    fns: Vec<String>,
    /// The `impl` or trait around it.
    types: Vec<String>,
    /// Inline modules around it (for child module files declared there).
    mods: Vec<String>,
    wrappers: &'a BTreeSet<String>,
    found: &'a mut BTreeMap<String, Vec<String>>,
    children: Option<&'a mut Vec<ModDecl>>,
}

impl SleepVisitor<'_> {
    fn record(&mut self, line: usize) {
        if !self.in_test {
            return;
        }
        let f = self.fns.first().cloned().unwrap_or_else(|| "-".into());
        let name = match self.types.first() {
            Some(t) if self.fns.len() <= 1 => format!("{t}::{f}"),
            _ => f,
        };
        let key = format!("{}:{name}", self.rel);
        self.found
            .entry(key)
            .or_default()
            .push(format!("{}:{line}", self.rel));
    }

    /// Visits an item's insides as test code if its attributes say so.
    fn with_attrs(&mut self, attrs: &[Attribute], visit: impl FnOnce(&mut Self)) {
        let was = self.in_test;
        self.in_test |= is_test_attr(attrs);
        visit(self);
        self.in_test = was;
    }

    /// Scans a macro's tokens for `sleep(`, `sleep_until(` or `wrapper(`.
    fn scan_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        for (i, t) in trees.iter().enumerate() {
            match t {
                proc_macro2::TokenTree::Ident(id)
                    if is_sleep_name(&id.to_string(), self.wrappers)
                        && matches!(
                            trees.get(i + 1),
                            Some(proc_macro2::TokenTree::Group(g))
                                if g.delimiter() == proc_macro2::Delimiter::Parenthesis
                        ) =>
                {
                    self.record(id.span().start().line);
                }
                proc_macro2::TokenTree::Group(g) => self.scan_tokens(g.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> syn::visit::Visit<'ast> for SleepVisitor<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let test = self.in_test || is_test_attr(&m.attrs);
        if m.content.is_none() {
            let decl = (
                self.mods.clone(),
                m.ident.to_string(),
                path_attr(&m.attrs),
                test,
            );
            if let Some(c) = self.children.as_mut() {
                c.push(decl);
            }
            return;
        }
        self.mods.push(m.ident.to_string());
        self.with_attrs(&m.attrs, |v| syn::visit::visit_item_mod(v, m));
        self.mods.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.fns.push(f.sig.ident.to_string());
        self.with_attrs(&f.attrs, |v| syn::visit::visit_item_fn(v, f));
        self.fns.pop();
    }

    fn visit_item_impl(&mut self, i: &'ast ItemImpl) {
        let ty = match &*i.self_ty {
            syn::Type::Path(tp) => tp.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.types.push(ty.unwrap_or_else(|| "impl".into()));
        self.with_attrs(&i.attrs, |v| syn::visit::visit_item_impl(v, i));
        self.types.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.types.push(t.ident.to_string());
        self.with_attrs(&t.attrs, |v| syn::visit::visit_item_trait(v, t));
        self.types.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.fns.push(f.sig.ident.to_string());
        self.with_attrs(&f.attrs, |v| syn::visit::visit_impl_item_fn(v, f));
        self.fns.pop();
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.fns.push(f.sig.ident.to_string());
        self.with_attrs(&f.attrs, |v| syn::visit::visit_trait_item_fn(v, f));
        self.fns.pop();
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func
            && let Some(last) = p.path.segments.last()
            && is_sleep_name(&last.ident.to_string(), self.wrappers)
        {
            self.record(last.ident.span().start().line);
        }
        syn::visit::visit_expr_call(self, c);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if is_sleep_name(&m.method.to_string(), self.wrappers) {
            self.record(m.method.span().start().line);
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.scan_tokens(m.tokens.clone());
    }
}
