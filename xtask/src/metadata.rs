//! The workspace as `cargo metadata` describes it: members, their targets
//! and their dependencies. Read from cargo, not by matching TOML text.

use std::path::Path;

use serde_json::Value;

/// How a package depends on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DepKind {
    /// A `[dependencies]` entry: part of what the package pulls in for its
    /// users.
    Normal,
    /// A `[dev-dependencies]` entry: tests, examples and benches only.
    Dev,
    /// A `[build-dependencies]` entry.
    Build,
}

/// One dependency of a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dependency {
    /// The depended-on package's name.
    pub(crate) name: String,
    /// Normal, dev or build.
    pub(crate) kind: DepKind,
    /// The `cfg(...)` or triple the dependency is limited to, if any.
    pub(crate) target: Option<String>,
    /// Whether a feature must enable it.
    pub(crate) optional: bool,
    /// The directory of a path dependency (a workspace member, or the
    /// package itself for a dev-dependency on its own features).
    pub(crate) path: Option<String>,
}

/// One workspace member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    /// The package name.
    pub(crate) name: String,
    /// The package version.
    pub(crate) version: String,
    /// The directory holding its manifest.
    pub(crate) dir: String,
    /// The name of its library target (`[lib] name`), if it has one.
    pub(crate) lib_name: Option<String>,
    /// Whether it may be published to crates.io (`publish` not false and
    /// not limited to other registries).
    pub(crate) publishable: bool,
    /// Whether it has a library target (a crate others can depend on).
    pub(crate) is_library: bool,
    /// The names of its example programs (`examples/*.rs`), sorted.
    pub(crate) examples: Vec<String>,
    /// The declared `rust-version`, if any.
    pub(crate) rust_version: Option<String>,
    /// Its dependencies, of every kind.
    pub(crate) dependencies: Vec<Dependency>,
}

impl Package {
    /// Whether the package's loom models can run: it depends on loom
    /// under `cfg(loom)` (directly, for `loom::model`).
    pub(crate) fn has_loom_models(&self) -> bool {
        self.dependencies
            .iter()
            .any(|d| d.name == "loom" && d.target.as_deref().is_some_and(|t| t.contains("loom")))
    }

    /// The last component of the package's directory (its folder name).
    pub(crate) fn folder(&self) -> &str {
        Path::new(&self.dir)
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or_default()
    }

    /// Path dependencies, of any kind, on workspace members other than the
    /// package itself: what `cargo package` cannot resolve from crates.io
    /// until those members are published.
    pub(crate) fn member_dependencies(&self) -> impl Iterator<Item = &Dependency> {
        self.dependencies
            .iter()
            .filter(|d| d.path.as_deref().is_some_and(|p| p != self.dir))
    }
}

/// The workspace's target directory, from `cargo metadata`.
pub(crate) fn target_directory() -> Result<String, String> {
    let output =
        crate::runner::cargo(&["metadata", "--format-version", "1", "--no-deps"]).output()?;
    let root: Value = serde_json::from_str(&output)
        .map_err(|e| format!("cargo metadata printed bad JSON: {e}"))?;
    root["target_directory"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "cargo metadata has no target_directory".to_string())
}

/// The workspace members, from `cargo metadata --no-deps`.
pub(crate) fn workspace() -> Result<Vec<Package>, String> {
    let output =
        crate::runner::cargo(&["metadata", "--format-version", "1", "--no-deps"]).output()?;
    parse(&output)
}

/// Reads the members out of `cargo metadata --format-version 1 --no-deps`
/// output.
pub(crate) fn parse(json: &str) -> Result<Vec<Package>, String> {
    let root: Value =
        serde_json::from_str(json).map_err(|e| format!("cargo metadata printed bad JSON: {e}"))?;
    let members: Vec<&str> = root["workspace_members"]
        .as_array()
        .ok_or("cargo metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = root["packages"]
        .as_array()
        .ok_or("cargo metadata has no packages")?;
    let mut out = Vec::new();
    for package in packages {
        let id = package["id"].as_str().unwrap_or_default();
        if !members.contains(&id) {
            continue;
        }
        let name = package["name"]
            .as_str()
            .ok_or("a package without a name")?
            .to_string();
        let lib_name = package["targets"].as_array().and_then(|targets| {
            targets
                .iter()
                .find(|t| {
                    t["kind"].as_array().is_some_and(|kinds| {
                        kinds.iter().any(|k| {
                            matches!(k.as_str(), Some("lib" | "rlib" | "dylib" | "proc-macro"))
                        })
                    })
                })
                .and_then(|t| t["name"].as_str().map(str::to_string))
        });
        let is_library = lib_name.is_some();
        let dir = package["manifest_path"]
            .as_str()
            .and_then(|m| Path::new(m).parent())
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        // `null`: any registry; a list: only those (`[]` is publish = false).
        let publishable = match &package["publish"] {
            Value::Null => true,
            Value::Array(registries) => registries.iter().any(|r| r == "crates-io"),
            _ => false,
        };
        let mut examples: Vec<String> = package["targets"]
            .as_array()
            .map(|targets| {
                targets
                    .iter()
                    .filter(|t| {
                        t["kind"]
                            .as_array()
                            .is_some_and(|kinds| kinds.iter().any(|k| k == "example"))
                    })
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        examples.sort_unstable();
        let dependencies = package["dependencies"]
            .as_array()
            .map(|deps| {
                deps.iter()
                    .map(|d| Dependency {
                        name: d["name"].as_str().unwrap_or_default().to_string(),
                        kind: match d["kind"].as_str() {
                            Some("dev") => DepKind::Dev,
                            Some("build") => DepKind::Build,
                            _ => DepKind::Normal,
                        },
                        target: d["target"].as_str().map(str::to_string),
                        optional: d["optional"].as_bool().unwrap_or(false),
                        path: d["path"].as_str().map(str::to_string),
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(Package {
            name,
            version: package["version"].as_str().unwrap_or_default().to_string(),
            dir,
            lib_name,
            publishable,
            is_library,
            examples,
            rust_version: package["rust_version"].as_str().map(str::to_string),
            dependencies,
        });
    }
    if out.is_empty() {
        return Err("cargo metadata lists no workspace members".to_string());
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small `cargo metadata` document: a library with a normal, an
    /// optional, a dev and a cfg(loom) dependency, and a binary-only tool.
    pub(crate) fn sample(extra_normal_dep_of_lib: Option<&str>) -> String {
        let extra = extra_normal_dep_of_lib.map_or(String::new(), |name| {
            format!(r#"{{"name": "{name}", "kind": null, "target": null, "optional": false}},"#)
        });
        format!(
            r#"{{
  "workspace_members": ["path+file:///w/lib#0.1.0", "path+file:///w/tool#0.1.0"],
  "packages": [
    {{"id": "path+file:///w/lib#0.1.0", "name": "lib", "version": "0.1.0", "rust_version": "1.88",
      "manifest_path": "/w/lib/Cargo.toml", "publish": null,
      "targets": [{{"kind": ["lib"], "name": "lib"}}, {{"kind": ["example"], "name": "tour"}}],
      "dependencies": [
        {extra}
        {{"name": "thiserror", "kind": null, "target": null, "optional": false}},
        {{"name": "proptest", "kind": null, "target": null, "optional": true}},
        {{"name": "tempfile", "kind": "dev", "target": null, "optional": false}},
        {{"name": "loom", "kind": "dev", "target": "cfg(loom)", "optional": false}}
      ]}},
    {{"id": "path+file:///w/tool#0.1.0", "name": "tool", "version": "0.1.0", "rust_version": null,
      "manifest_path": "/w/tool/Cargo.toml", "publish": [],
      "targets": [{{"kind": ["bin"], "name": "tool"}}],
      "dependencies": [
        {{"name": "clap", "kind": null, "target": null, "optional": false}},
        {{"name": "lib", "kind": null, "target": null, "optional": false, "path": "/w/lib"}}
      ]}}
  ]
}}"#
        )
    }

    #[test]
    fn members_targets_and_dependencies_are_read() {
        let packages = parse(&sample(None)).expect("valid");
        assert_eq!(packages.len(), 2);
        let lib = &packages[0];
        assert_eq!(lib.name, "lib");
        assert!(lib.is_library);
        assert_eq!(lib.examples, ["tour"]);
        assert_eq!(lib.rust_version.as_deref(), Some("1.88"));
        assert!(lib.has_loom_models());
        assert_eq!(lib.dependencies.len(), 4);
        assert_eq!(lib.dependencies[1].kind, DepKind::Normal);
        assert!(lib.dependencies[1].optional);
        assert_eq!(lib.dependencies[2].kind, DepKind::Dev);
        let tool = &packages[1];
        assert!(!tool.is_library);
        assert_eq!(lib.lib_name.as_deref(), Some("lib"));
        assert_eq!((lib.folder(), tool.folder()), ("lib", "tool"));
        assert!(lib.publishable && !tool.publishable);
        assert_eq!(lib.member_dependencies().count(), 0);
        let on_lib: Vec<&str> = tool
            .member_dependencies()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(on_lib, ["lib"]);
        assert!(tool.examples.is_empty());
        assert!(!tool.has_loom_models());
    }

    #[test]
    fn bad_metadata_is_an_error() {
        assert!(parse("not json").is_err());
        assert!(parse(r#"{"packages": []}"#).is_err());
        assert!(parse(r#"{"workspace_members": [], "packages": []}"#).is_err());
    }
}
