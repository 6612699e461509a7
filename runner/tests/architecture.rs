//! docs/architecture.md is the house as built: its rooms table names every
//! room of `src/` (each top-level file and folder, and each file of the
//! folders it details), and nothing that is not there; development.md's
//! source layout names only paths that exist; and no file of production
//! code grows past the size a reader takes in at once.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::root;

/// Production lines a source file may hold (its `#[cfg(test)]` module, and
/// test files, aside).
const MAX_LINES: usize = 420;

/// The paths (relative to `src/`) the rooms table names in its first column.
fn rooms_named(architecture: &str) -> BTreeSet<String> {
    let table = architecture
        .split("## The rooms")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default();
    let mut named = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split('|').nth(1).unwrap_or_default();
        for (i, part) in first.split('`').enumerate() {
            if i % 2 == 1 {
                named.insert(part.to_string());
            }
        }
    }
    named
}

/// Test support that lives in `src/` because tests, fuzz targets and the
/// runner share it: compiled only for tests and the `testing` feature.
const TEST_SUPPORT: [&str; 1] = ["cluster/fake.rs"];

fn is_test_file(rel: &str) -> bool {
    TEST_SUPPORT.contains(&rel)
        || rel.ends_with("tests.rs")
        || rel.contains("/tests/")
        || rel.ends_with("test_support.rs")
        || rel.starts_with("tests/")
}

/// Every production `.rs` file under `dir`, relative to `src/`.
fn sources(src: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        let rel = path
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if path.is_dir() {
            sources(src, &path, out);
        } else if rel.ends_with(".rs") && !is_test_file(&rel) {
            out.push(rel);
        }
    }
}

/// A file's production lines: those before its `#[cfg(test)]` test module.
fn production_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines
                    .get(i + 1)
                    .is_some_and(|next| next.trim_start().starts_with("mod tests"))
        })
        .unwrap_or(lines.len());
    lines[..end].len()
}

fn files() -> Vec<String> {
    let src = root().join("src");
    let mut out = Vec::new();
    sources(&src, &src, &mut out);
    out
}

#[test]
fn the_rooms_table_names_every_room_and_only_rooms() {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let named = rooms_named(&text);
    assert!(!named.is_empty(), "docs/architecture.md has no rooms table");
    let src = root().join("src");
    let missing: Vec<&String> = named
        .iter()
        .filter(|rel| !src.join(rel.trim_end_matches('/')).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "the rooms table names what is not in src/: {missing:?}"
    );
    // A file is covered by its own row, or by its folder's when the table
    // does not detail that folder (no row names a file inside it).
    let detailed: BTreeSet<&str> = (named.iter())
        .filter(|rel| !rel.ends_with('/'))
        .filter_map(|rel| rel.rsplit_once('/').map(|(dir, _)| dir))
        .filter(|dir| !dir.is_empty())
        .collect();
    let unnamed: Vec<String> = files()
        .into_iter()
        .filter(|rel| rel != "lib.rs")
        .filter(|rel| {
            let top = rel.split('/').next().unwrap_or_default();
            let folder = rel.rsplit_once('/').map(|(dir, _)| dir);
            if named.contains(rel.as_str()) {
                return false;
            }
            // A folder's mod.rs is the folder's own row.
            if let Some(dir) = folder {
                if rel.ends_with("/mod.rs") && named.contains(&format!("{dir}/")) {
                    return false;
                }
                if !detailed.contains(dir) && named.contains(&format!("{top}/")) {
                    return false;
                }
            }
            true
        })
        .collect();
    assert!(
        unnamed.is_empty(),
        "docs/architecture.md's rooms table does not name: {unnamed:?}"
    );
}

#[test]
fn the_source_layout_names_only_what_exists() {
    let text = std::fs::read_to_string(root().join("docs/development.md")).unwrap();
    let layout = text
        .split("## Source layout")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default();
    let absent: Vec<&str> = layout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|first| first.starts_with("src/"))
        .filter(|path| !root().join(path.trim_end_matches('/')).exists())
        .collect();
    assert!(
        absent.is_empty(),
        "development.md's source layout names: {absent:?}"
    );
}

#[test]
fn no_production_file_outgrows_a_reading() {
    let src = root().join("src");
    let long: Vec<String> = files()
        .into_iter()
        .filter_map(|rel| {
            let n = production_lines(&std::fs::read_to_string(src.join(&rel)).unwrap());
            (n > MAX_LINES).then(|| format!("src/{rel}: {n} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "production files over {MAX_LINES} lines (split them by what they do): {long:?}"
    );
}

#[test]
fn production_lines_stop_at_the_test_module() {
    assert_eq!(production_lines("a\nb\n#[cfg(test)]\nmod tests;\n"), 2);
    assert_eq!(production_lines("a\n#[cfg(test)]\nmod tests {\n x\n}\n"), 1);
    // A cfg(test) item that is not the test module counts.
    assert_eq!(production_lines("a\n#[cfg(test)]\nfn f() {}\nb\n"), 4);
    assert!(is_test_file("node/tests/serde_oracle.rs") && !is_test_file("node.rs"));
}
