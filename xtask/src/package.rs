//! The `package` step: every package of the workspace but xtask is named
//! in the one family scheme and packages cleanly for crates.io.
//!
//! * **Names.** A published package is `replmem-<folder>` and its library
//!   keeps the folder's name (`[lib] name`, `-` as `_`), so no `use` line
//!   names the prefix; xtask is `xtask` and not published. The check is
//!   a rule, not a list, so crates that land later (`compaction`,
//!   `row-cache`) pass as soon as they are named `replmem-compaction` and
//!   `replmem-row-cache`.
//! * **Packaging.** `cargo package` (which builds the packaged sources)
//!   for the packages with no path dependency on another member; for the
//!   others, whose workspace dependencies are not on crates.io yet,
//!   `cargo package --no-verify` of every published package at once (cargo
//!   resolves the members from the packages it just made). Then each
//!   `.crate` is opened and its normalised manifest read: it must carry
//!   name, version, description, license and readme, and the readme must
//!   be in the archive. `repository` is real or absent: the repository has
//!   no public address yet, so the manifests leave it out, and an address
//!   on a reserved placeholder domain (`example.invalid`, `example.com`)
//!   is refused. Cargo's warning that a manifest has no documentation,
//!   homepage or repository is therefore expected, and the one warning
//!   not counted as a problem.
//!
//! Runs offline when the registry index is cached (it is once anything
//! was built), with `--allow-dirty` so uncommitted work can be checked.

use std::path::{Path, PathBuf};

use crate::metadata::Package;
use crate::runner;

/// The family prefix of every published package.
pub(crate) const PREFIX: &str = "replmem-";

/// The packages that are never published, with the name each must keep.
pub(crate) const UNPUBLISHED: &[&str] = &["xtask", "test-support"];

/// The `[package]` fields every packaged manifest must carry.
const REQUIRED_FIELDS: &[&str] = &["name", "version", "description", "license", "readme"];

/// Domains reserved for examples (RFC 2606, RFC 6761): a URL on one of them
/// is a placeholder, not an address.
const PLACEHOLDER_DOMAINS: &[&str] = &[
    "example.invalid",
    "example.com",
    "example.org",
    "example.net",
];

/// The warning cargo gives a manifest without documentation, homepage or
/// repository: expected while the repository has no public address.
const NO_REPOSITORY_WARNING: &str = "manifest has no documentation, homepage or repository";

/// Whether `url` is on a reserved placeholder domain.
pub(crate) fn is_placeholder_url(url: &str) -> bool {
    let host = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    PLACEHOLDER_DOMAINS
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")) || host.ends_with(".invalid"))
}

/// Every way the members' names, library names and `publish` settings
/// drift from the scheme; empty when they follow it.
pub(crate) fn scheme_problems(packages: &[Package]) -> Vec<String> {
    let mut problems = Vec::new();
    for p in packages {
        let folder = p.folder();
        if UNPUBLISHED.contains(&p.name.as_str()) {
            if p.publishable {
                problems.push(format!(
                    "`{}` is a workspace tool and must not be published: set `publish = false` in {folder}/Cargo.toml",
                    p.name
                ));
            }
            continue;
        }
        let expected = format!("{PREFIX}{folder}");
        if p.name != expected {
            problems.push(format!(
                "package `{}` (in {folder}/) must be named `{expected}`: every published package is `{PREFIX}<folder>`",
                p.name
            ));
        }
        if let Some(lib) = &p.lib_name {
            let expected_lib = folder.replace('-', "_");
            if *lib != expected_lib {
                problems.push(format!(
                    "the library of `{}` is `{lib}` but must be `{expected_lib}` (set `[lib] name = \"{expected_lib}\"` in {folder}/Cargo.toml), so that `use` lines name the crate without the prefix",
                    p.name
                ));
            }
        }
        if !p.publishable {
            problems.push(format!(
                "`{}` must be publishable to crates.io: remove `publish = false` (or the registry list) from {folder}/Cargo.toml",
                p.name
            ));
        }
    }
    problems
}

/// The members `cargo package` can verify alone: published, with no path
/// dependency on another member.
pub(crate) fn verifiable(packages: &[Package]) -> Vec<&Package> {
    packages
        .iter()
        .filter(|p| p.publishable && p.member_dependencies().next().is_none())
        .collect()
}

/// The `[package]` table's `key = "value"` entries of a manifest as cargo
/// normalises it for packaging (one entry a line; other tables ignored).
pub(crate) fn package_fields(manifest: &str) -> Vec<(String, String)> {
    let mut in_package = false;
    let mut fields = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        if let Some(text) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            fields.push((key.trim().to_string(), text.to_string()));
        }
    }
    fields
}

/// What is wrong with the packaged manifest of `package`, given the
/// archive's file list; empty when nothing is.
pub(crate) fn manifest_problems(
    package: &Package,
    manifest: &str,
    files: &[String],
) -> Vec<String> {
    let fields = package_fields(manifest);
    let get = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let mut problems = Vec::new();
    for key in REQUIRED_FIELDS {
        if get(key).is_none_or(str::is_empty) {
            problems.push(format!(
                "the packaged manifest of `{}` has no `{key}`: set it in {}/Cargo.toml (or its workspace value)",
                package.name,
                package.folder()
            ));
        }
    }
    for key in ["repository", "homepage", "documentation"] {
        if let Some(url) = get(key)
            && is_placeholder_url(url)
        {
            problems.push(format!(
                "the packaged manifest of `{}` has the placeholder {key} `{url}`: give a real address or none",
                package.name
            ));
        }
    }
    if let Some(name) = get("name")
        && name != package.name
    {
        problems.push(format!(
            "the packaged manifest of `{}` names the package `{name}`",
            package.name
        ));
    }
    if let Some(readme) = get("readme") {
        let inside = format!("{}-{}/{readme}", package.name, package.version);
        if !files.contains(&inside) {
            problems.push(format!(
                "`{}` declares readme `{readme}` but its .crate does not contain {inside}",
                package.name
            ));
        }
    }
    problems
}

/// Whether cargo's registry index is cached, so `--offline` can resolve.
fn index_cached() -> bool {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    home.is_some_and(|h| {
        std::fs::read_dir(h.join("registry").join("index"))
            .is_ok_and(|mut entries| entries.next().is_some())
    })
}

/// Runs `cargo package` with `args` plus `-p` for each of `packages`;
/// returns cargo's warnings.
fn cargo_package(
    args: &[&str],
    packages: &[&Package],
    offline: bool,
) -> Result<Vec<String>, String> {
    let mut cargo_args = vec!["package", "--allow-dirty"];
    if offline {
        cargo_args.push("--offline");
    }
    cargo_args.extend_from_slice(args);
    for p in packages {
        cargo_args.extend_from_slice(&["-p", &p.name]);
    }
    let output = runner::cargo(&cargo_args)
        .tee()
        .map_err(|(reason, _)| format!("a package would not package: {reason}"))?;
    Ok(output
        .lines()
        .filter(|l| l.trim_start().starts_with("warning:") && !l.contains(NO_REPOSITORY_WARNING))
        .map(str::to_string)
        .collect())
}

/// The whole step: names, then packaging, then the packaged manifests;
/// reports every problem found, not only the first.
pub(crate) fn run(packages: &[Package]) -> Result<String, String> {
    let mut problems = scheme_problems(packages);
    let published: Vec<&Package> = packages.iter().filter(|p| p.publishable).collect();
    if published.is_empty() {
        return Err("no workspace package is publishable".to_string());
    }
    let offline = index_cached();
    let verified = verifiable(packages);
    let mut warnings = Vec::new();
    if !verified.is_empty() {
        warnings.extend(cargo_package(&[], &verified, offline)?);
    }
    warnings.extend(cargo_package(&["--no-verify"], &published, offline)?);

    let target = crate::metadata::target_directory()?;
    for p in &published {
        let archive = Path::new(&target)
            .join("package")
            .join(format!("{}-{}.crate", p.name, p.version));
        let archive_shown = archive.display().to_string();
        let files: Vec<String> = runner::program("tar", &["-tzf", &archive_shown])
            .output()
            .map_err(|e| format!("cannot list {archive_shown}: {e}"))?
            .lines()
            .map(str::to_string)
            .collect();
        let manifest_inside = format!("{}-{}/Cargo.toml", p.name, p.version);
        let manifest = runner::program("tar", &["-xzOf", &archive_shown, &manifest_inside])
            .output()
            .map_err(|e| format!("cannot read {manifest_inside} from {archive_shown}: {e}"))?;
        problems.extend(manifest_problems(p, &manifest, &files));
    }
    problems.extend(
        warnings
            .into_iter()
            .map(|w| format!("cargo package warned: {}", w.trim())),
    );
    if problems.is_empty() {
        Ok(format!(
            "({} packages follow `{PREFIX}<folder>` and package; verified: {})",
            published.len(),
            verified
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::DepKind;
    use crate::metadata::Dependency;

    fn package(name: &str, folder: &str, lib: Option<&str>, publishable: bool) -> Package {
        Package {
            name: name.to_string(),
            version: "0.1.0".to_string(),
            dir: format!("/w/{folder}"),
            lib_name: lib.map(str::to_string),
            publishable,
            is_library: lib.is_some(),
            examples: Vec::new(),
            rust_version: None,
            dependencies: Vec::new(),
        }
    }

    #[test]
    fn names_in_the_scheme_pass() {
        let members = [
            package("replmem-logalloc", "logalloc", Some("logalloc"), true),
            package("replmem-row-cache", "row-cache", Some("row_cache"), true),
            package("replmem-compaction", "compaction", Some("compaction"), true),
            package("replmem-sstable-tool", "sstable-tool", None, true),
            package("xtask", "xtask", None, false),
        ];
        assert_eq!(scheme_problems(&members), Vec::<String>::new());
    }

    #[test]
    fn the_workspace_follows_the_scheme() {
        let packages = crate::metadata::workspace().expect("cargo metadata");
        assert_eq!(scheme_problems(&packages), Vec::<String>::new());
        // replmem-sync is the one member with no member dependency.
        assert!(
            verifiable(&packages)
                .iter()
                .any(|p| p.name == "replmem-sync")
        );
    }

    #[test]
    fn a_name_off_the_scheme_fails() {
        let problems =
            scheme_problems(&[package("row-cache", "row-cache", Some("row_cache"), true)]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("must be named `replmem-row-cache`"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_renamed_library_or_a_wrong_publish_setting_fails() {
        let problems = scheme_problems(&[
            package("replmem-sync", "sync", Some("replmem_sync"), true),
            package("replmem-mutation", "mutation", Some("mutation"), false),
            package("xtask", "xtask", None, true),
        ]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("must be `sync`"), "{problems:?}");
        assert!(problems[1].contains("must be publishable"), "{problems:?}");
        assert!(
            problems[2].contains("must not be published"),
            "{problems:?}"
        );
    }

    #[test]
    fn only_packages_without_member_dependencies_are_verified() {
        let leaf = package("replmem-sync", "sync", Some("sync"), true);
        let mut with_self_dev_dep = package("replmem-mutation", "mutation", Some("mutation"), true);
        with_self_dev_dep.dependencies.push(Dependency {
            name: "replmem-mutation".to_string(),
            kind: DepKind::Dev,
            target: None,
            optional: false,
            path: Some("/w/mutation".to_string()),
        });
        let mut dependent = package("replmem-logalloc", "logalloc", Some("logalloc"), true);
        dependent.dependencies.push(Dependency {
            name: "replmem-sync".to_string(),
            kind: DepKind::Normal,
            target: None,
            optional: false,
            path: Some("/w/sync".to_string()),
        });
        let tool = package("xtask", "xtask", None, false);
        let members = [leaf, with_self_dev_dep, dependent, tool];
        let names: Vec<&str> = verifiable(&members)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["replmem-sync", "replmem-mutation"]);
    }

    const MANIFEST: &str = r#"# THIS FILE IS AUTOMATICALLY GENERATED BY CARGO
[package]
edition = "2024"
rust-version = "1.88"
name = "replmem-sync"
version = "0.1.0"
build = false
description = "The facade."
readme = "README.md"
keywords = ["loom"]
license = "Apache-2.0"

[lib]
name = "sync"
path = "src/lib.rs"
"#;

    #[test]
    fn a_complete_packaged_manifest_passes() {
        let p = package("replmem-sync", "sync", Some("sync"), true);
        let files = [
            "replmem-sync-0.1.0/Cargo.toml",
            "replmem-sync-0.1.0/README.md",
        ]
        .map(String::from);
        assert_eq!(
            manifest_problems(&p, MANIFEST, &files),
            Vec::<String>::new()
        );
        let fields = package_fields(MANIFEST);
        assert!(fields.contains(&("name".to_string(), "replmem-sync".to_string())));
        // `[lib] name` is not the package's name.
        assert_eq!(fields.iter().filter(|(k, _)| k == "name").count(), 1);
    }

    #[test]
    fn a_placeholder_repository_is_refused_and_a_real_one_passes() {
        let p = package("replmem-sync", "sync", Some("sync"), true);
        let files = [
            "replmem-sync-0.1.0/Cargo.toml",
            "replmem-sync-0.1.0/README.md",
        ]
        .map(String::from);
        let with = |url: &str| {
            MANIFEST.replace(
                "license = \"Apache-2.0\"\n",
                &format!("license = \"Apache-2.0\"\nrepository = \"{url}\"\n"),
            )
        };
        let problems =
            manifest_problems(&p, &with("https://example.invalid/replica-memory"), &files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("placeholder repository `https://example.invalid/replica-memory`"),
            "{problems:?}"
        );
        assert!(is_placeholder_url("https://git.example.com/x"));
        assert!(is_placeholder_url("http://replica.invalid:8080/x"));
        assert!(!is_placeholder_url("https://github.com/scylladb/scylladb"));
        assert_eq!(
            manifest_problems(&p, &with("https://github.com/scylladb/scylladb"), &files),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_missing_field_or_readme_is_named() {
        let p = package("replmem-sync", "sync", Some("sync"), true);
        let without = MANIFEST.replace("license = \"Apache-2.0\"\n", "");
        let files = ["replmem-sync-0.1.0/Cargo.toml".to_string()];
        let problems = manifest_problems(&p, &without, &files);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("has no `license`"), "{problems:?}");
        assert!(
            problems[1].contains("does not contain replmem-sync-0.1.0/README.md"),
            "{problems:?}"
        );
    }
}
