//! The `readmes` step: each crate a user is most likely to pick alone
//! builds and runs, from outside the workspace, with only its README's
//! lines: the `[dependencies]` snippet (a path dependency on a clone of
//! this repository beside the user's project, `../replica-memory/<folder>`,
//! pointed at this workspace) and the first Rust example, made into
//! `src/main.rs` as rustdoc makes a doc test (`# ` lines shown, a body
//! ending in `Ok::<(), E>(())` run as a function returning that result).
//!
//! Each crate gets its own package, so a sibling crate the example needs
//! and the snippet does not name fails to resolve, as it would for a user.
//! The packages are members of one temporary workspace (removed
//! afterwards) with a copy of this workspace's `Cargo.lock` and its target
//! directory, so the build is offline and reuses what was built.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::runner;

/// The folders of the crates whose README must work on its own.
pub(crate) const PICKABLE: &[&str] = &[
    "logalloc",
    "region-group",
    "memtable",
    "sstable",
    "commitlog",
    "compaction",
    "row-cache",
    "replica",
    "fs",
    "io-scheduler",
];

/// Where the README's snippet says the clone of this repository is,
/// relative to the user's project.
const CLONE: &str = "../replica-memory/";

/// What a user copies from a README: the dependency lines and the example.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ReadmeLines {
    /// The lines of the snippet's `[dependencies]` table.
    pub(crate) dependencies: Vec<String>,
    /// The first Rust example, as written (hidden `# ` lines included).
    pub(crate) example: String,
}

/// The fenced code blocks of a Markdown text: (info string, body).
fn code_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The dependency snippet and the example of `readme` (of the crate in
/// `folder`), or what is missing.
pub(crate) fn extract(readme: &str, folder: &str) -> Result<ReadmeLines, String> {
    let blocks = code_blocks(readme);
    let dependencies: Vec<String> = blocks
        .iter()
        .filter(|(info, _)| info == "toml")
        .find_map(|(_, body)| {
            let mut lines = body.lines().map(str::trim);
            lines.find(|l| *l == "[dependencies]")?;
            Some(
                lines
                    .take_while(|l| !l.starts_with('['))
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect(),
            )
        })
        .ok_or_else(|| {
            format!("{folder}/README.md has no ```toml block with a [dependencies] table")
        })?;
    let own = format!("package = \"replmem-{folder}\", path = \"{CLONE}{folder}\"");
    if !dependencies.iter().any(|l| l.contains(&own)) {
        return Err(format!(
            "{folder}/README.md's [dependencies] snippet does not name the crate as `{own}`"
        ));
    }
    let example = blocks
        .into_iter()
        .find(|(info, _)| info == "rust")
        .map(|(_, body)| body)
        .ok_or_else(|| format!("{folder}/README.md has no ```rust example"))?;
    Ok(ReadmeLines {
        dependencies,
        example,
    })
}

/// The example as a program, the way rustdoc builds a doc test: `# `
/// hides a line from the reader, not from the compiler; without a `main`
/// the body becomes one, and a body ending in `Ok::<(), E>(())` a
/// function whose result `main` unwraps.
pub(crate) fn main_rs(example: &str) -> String {
    let body: Vec<&str> = example
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed == "#" {
                ""
            } else if let Some(rest) = trimmed.strip_prefix("# ") {
                rest
            } else {
                line
            }
        })
        .collect();
    let body = body.join("\n");
    if body.contains("fn main(") {
        return format!("{body}\n");
    }
    let returns_result = body
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with("Ok::<"));
    if returns_result {
        format!(
            "fn main() {{\n    fn example() -> Result<(), impl std::fmt::Debug> {{\n{body}\n    }}\n    example().unwrap();\n}}\n"
        )
    } else {
        format!("fn main() {{\n{body}\n}}\n")
    }
}

/// The user's `Cargo.toml` for the crate in `folder`: the README's
/// dependency lines with the clone's path pointing at `root`.
pub(crate) fn manifest(folder: &str, dependencies: &[String], root: &Path) -> String {
    let clone = format!("{}/", root.display());
    let deps: Vec<String> = dependencies
        .iter()
        .map(|l| l.replace(&format!("\"{CLONE}"), &format!("\"{clone}")))
        .collect();
    format!(
        "[package]\nname = \"readme-{folder}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[dependencies]\n{}\n",
        deps.join("\n")
    )
}

/// Writes the temporary workspace under `dir`, builds it offline with
/// `target` as target directory, and runs each program.
fn build_and_run(dir: &Path, root: &Path, target: &str) -> Result<String, String> {
    let write = |path: PathBuf, text: &str| {
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let mut members = Vec::new();
    for folder in PICKABLE {
        let readme_path = root.join(folder).join("README.md");
        let readme = fs::read_to_string(&readme_path)
            .map_err(|e| format!("cannot read {}: {e}", readme_path.display()))?;
        let lines = extract(&readme, folder)?;
        let package = dir.join(folder);
        fs::create_dir_all(package.join("src"))
            .map_err(|e| format!("cannot create {}: {e}", package.display()))?;
        write(
            package.join("Cargo.toml"),
            &manifest(folder, &lines.dependencies, root),
        )?;
        write(
            package.join("src").join("main.rs"),
            &main_rs(&lines.example),
        )?;
        members.push(format!("\"{folder}\""));
    }
    write(
        dir.join("Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    )?;
    // The same versions as this workspace, so nothing needs the network
    // and the shared target directory's builds are reused.
    fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| format!("cannot copy Cargo.lock: {e}"))?;
    let manifest_path = dir.join("Cargo.toml").display().to_string();
    runner::cargo(&[
        "build",
        "--offline",
        "--workspace",
        "--manifest-path",
        &manifest_path,
    ])
    .env("CARGO_TARGET_DIR", target)
    .status()
    .map_err(|e| format!("a README's lines do not build outside the workspace: {e}"))?;
    let mut failed = Vec::new();
    for folder in PICKABLE {
        let started = Instant::now();
        let program = Path::new(target)
            .join("debug")
            .join(format!("readme-{folder}"))
            .display()
            .to_string();
        match runner::program(&program, &[]).output() {
            Ok(_) => println!(
                "{folder}/README.md: built and ran in {:.2}s",
                started.elapsed().as_secs_f64()
            ),
            Err(reason) => {
                println!("{folder}/README.md: FAILED");
                failed.push(format!("{folder}/README.md's example: {reason}"));
            }
        }
    }
    if failed.is_empty() {
        Ok(format!(
            "({} READMEs' snippets and examples build and run outside the workspace)",
            PICKABLE.len()
        ))
    } else {
        Err(failed.join("\n"))
    }
}

/// The whole step; the temporary workspace is removed whatever happens.
pub(crate) fn run() -> Result<String, String> {
    let root = runner::workspace_root();
    let target = crate::metadata::target_directory()?;
    let dir = std::env::temp_dir().join(format!("xtask-readmes-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let result = build_and_run(&dir, &root, &target);
    if let Err(e) = fs::remove_dir_all(&dir) {
        println!("warning: cannot remove {}: {e}", dir.display());
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = r#"# thing

In your `Cargo.toml`:

```toml
[dependencies]
thing = { package = "replmem-thing", path = "../replica-memory/thing" }
tempfile = "3" # for the example

[dev-dependencies]
other = "1"
```

```rust
use thing::Thing;
let t = Thing::new()?;
# Ok::<(), thing::Error>(())
```

```rust
let second = 2;
```
"#;

    #[test]
    fn the_snippet_and_the_first_example_are_taken() {
        let lines = extract(README, "thing").expect("complete README");
        assert_eq!(
            lines.dependencies,
            [
                r#"thing = { package = "replmem-thing", path = "../replica-memory/thing" }"#,
                r#"tempfile = "3" # for the example"#,
            ]
        );
        assert_eq!(
            lines.example,
            "use thing::Thing;\nlet t = Thing::new()?;\n# Ok::<(), thing::Error>(())\n"
        );
    }

    #[test]
    fn a_readme_without_a_snippet_or_an_example_is_named() {
        let no_rust = README.replace("```rust", "```text");
        assert_eq!(
            extract(&no_rust, "thing"),
            Err("thing/README.md has no ```rust example".to_string())
        );
        let no_toml = README.replace("```toml", "```text");
        assert!(
            extract(&no_toml, "thing")
                .unwrap_err()
                .contains("no ```toml block")
        );
        let other_path = README.replace("../replica-memory/thing", "../elsewhere/thing");
        assert!(
            extract(&other_path, "thing")
                .unwrap_err()
                .contains("does not name the crate")
        );
    }

    #[test]
    fn an_example_becomes_a_program_as_rustdoc_makes_it() {
        let with_result = main_rs("use a::B;\nlet x = B::new()?;\n# Ok::<(), a::Error>(())\n");
        assert!(
            with_result.contains("fn example() -> Result<(), impl std::fmt::Debug> {"),
            "{with_result}"
        );
        assert!(
            with_result.contains("\nOk::<(), a::Error>(())\n"),
            "{with_result}"
        );
        assert!(with_result.contains("example().unwrap();"), "{with_result}");

        let plain = main_rs("let x = 1;\nassert_eq!(x, 1);\n");
        assert_eq!(plain, "fn main() {\nlet x = 1;\nassert_eq!(x, 1);\n}\n");

        let own_main = main_rs("# fn main() -> Result<(), E> {\nrun()?;\n# Ok(())\n# }\n");
        assert_eq!(
            own_main,
            "fn main() -> Result<(), E> {\nrun()?;\nOk(())\n}\n"
        );
    }

    #[test]
    fn the_clone_path_points_at_the_workspace() {
        let deps = [
            r#"thing = { package = "replmem-thing", path = "../replica-memory/thing" }"#
                .to_string(),
        ];
        let toml = manifest("thing", &deps, Path::new("/w/main"));
        assert!(
            toml.contains(r#"thing = { package = "replmem-thing", path = "/w/main/thing" }"#),
            "{toml}"
        );
        assert!(toml.contains("name = \"readme-thing\""), "{toml}");
        assert!(toml.contains("publish = false"), "{toml}");
    }

    #[test]
    fn every_pickable_crate_has_its_readme_lines() {
        let root = runner::workspace_root();
        for folder in PICKABLE {
            let readme = fs::read_to_string(root.join(folder).join("README.md")).expect("README");
            let lines = extract(&readme, folder).unwrap_or_else(|e| panic!("{e}"));
            assert!(!lines.example.trim().is_empty(), "{folder}");
        }
    }
}
