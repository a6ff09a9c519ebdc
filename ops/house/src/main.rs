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
    Ok(failed == 0 && stale.is_empty())
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
