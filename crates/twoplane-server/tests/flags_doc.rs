//! The flags of every `twoplane` command are documented in one place, the table in
//! docs/server.md headed `| command | flag | default | meaning |`, and that table says what the
//! binary takes: every `--flag` that `twoplane <command> --help` lists has a row for that command,
//! and every row names a flag its command's `--help` lists. Every command `twoplane --help` lists
//! is checked, so a new command without rows fails too. A row's command cell names commands in
//! backticks (`` `serve` ``), or says `every command` for a global flag. `--help` and `--version`
//! need no row.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_twoplane");
const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/server.md");
const HEADER: &str = "| command | flag | default | meaning |";
const UNDOCUMENTED: [&str; 2] = ["help", "version"];

fn help(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).arg("--help").env("RUST_LOG", "off").output().unwrap();
    assert!(
        out.status.success(),
        "`twoplane {} --help` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("--help prints UTF-8")
}

/// The commands `twoplane --help` lists (clap's own `help` command aside).
fn commands() -> Vec<String> {
    let text = help(&[]);
    let mut in_commands = false;
    let mut names = Vec::new();
    for line in text.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            // A command line is indented by two spaces; a wrapped description by more.
            let Some(rest) = line.strip_prefix("  ") else { break };
            if rest.starts_with(' ') {
                continue;
            }
            let name = rest.split_whitespace().next().unwrap_or_default();
            if name.is_empty() {
                break;
            }
            if name != "help" {
                names.push(name.to_string());
            }
        }
    }
    assert!(names.iter().any(|n| n == "serve"), "`twoplane --help` lists no `serve` command:\n{text}");
    names
}

/// Every long flag a command's `--help` defines: the first word of each option line (indented by
/// two to six spaces, `-x, --name` or `--name`); flags named inside descriptions do not count.
fn help_flags(command: &str) -> BTreeSet<String> {
    let text = help(&[command]);
    let mut flags = BTreeSet::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if !(2..=6).contains(&indent) {
            continue;
        }
        let mut word = line.split_whitespace().next().unwrap_or_default();
        if word.starts_with('-') && !word.starts_with("--") {
            // `-h, --help`: the long name follows the short one.
            word = line.split_whitespace().nth(1).unwrap_or_default();
        }
        if let Some(name) = word.strip_prefix("--") {
            let name = name.trim_end_matches(',');
            if !UNDOCUMENTED.contains(&name) {
                flags.insert(format!("--{name}"));
            }
        }
    }
    assert!(!flags.is_empty(), "no flags found in `twoplane {command} --help`:\n{text}");
    flags
}

/// The table's rows: command (or `*` for every command) to the flags documented for it, each with
/// its line number in docs/server.md.
fn doc_flags() -> BTreeMap<String, BTreeMap<String, usize>> {
    let text = std::fs::read_to_string(DOC).unwrap_or_else(|e| panic!("cannot read {DOC}: {e}"));
    let start = text.lines().position(|l| l.trim() == HEADER).unwrap_or_else(|| {
        panic!("docs/server.md has no flag table: no line `{HEADER}` (the one table of every command's flags)")
    });
    assert_eq!(
        text.lines().filter(|l| l.trim() == HEADER).count(),
        1,
        "docs/server.md has more than one `{HEADER}` table: the flags belong in one"
    );
    let mut table: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate().skip(start + 2) {
        let line = line.trim();
        if !line.starts_with('|') {
            break;
        }
        let lineno = i + 1;
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert!(cells.len() >= 4, "docs/server.md:{lineno}: a flag table row needs four cells: {line}");
        let flag = cells[1].trim_matches('`');
        assert!(
            flag.starts_with("--") && !flag.contains(' ') && cells[1].starts_with('`'),
            "docs/server.md:{lineno}: the flag cell must be one `--flag` in backticks, got {:?}",
            cells[1]
        );
        let mut names: Vec<String> = cells[0].split('`').skip(1).step_by(2).map(str::to_string).collect();
        if cells[0] == "every command" {
            names.push("*".into());
        }
        assert!(
            !names.is_empty(),
            "docs/server.md:{lineno}: the command cell must name commands in backticks or say `every command`, got {:?}",
            cells[0]
        );
        for name in names {
            if let Some(first) = table.entry(name.clone()).or_default().insert(flag.to_string(), lineno) {
                panic!("docs/server.md:{lineno}: `{name} {flag}` is listed twice (also at line {first})");
            }
        }
    }
    table
}

#[test]
fn the_flag_table_in_docs_server_md_matches_every_commands_help() {
    let commands = commands();
    let table = doc_flags();
    let global = table.get("*").cloned().unwrap_or_default();
    let mut problems = Vec::new();

    for name in table.keys().filter(|n| *n != "*") {
        if !commands.contains(name) {
            problems
                .push(format!("the table has rows for `twoplane {name}`, a command `twoplane --help` does not list"));
        }
    }
    for command in &commands {
        let in_help = help_flags(command);
        let mut documented = table.get(command).cloned().unwrap_or_default();
        documented.extend(global.iter().map(|(f, l)| (f.clone(), *l)));
        for flag in &in_help {
            if !documented.contains_key(flag) {
                problems.push(format!(
                    "`twoplane {command} {flag}` is in `twoplane {command} --help` but missing from the table: add its row (command `{command}`, flag `{flag}`, its default and meaning)"
                ));
            }
        }
        for (flag, line) in &documented {
            if !in_help.contains(flag) {
                problems.push(format!(
                    "docs/server.md:{line} lists `twoplane {command} {flag}`, which `twoplane {command} --help` does not have: remove the row or correct the flag"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/server.md's flag table (headed `{HEADER}`) and the binary's --help disagree:\n  - {}\n",
        problems.join("\n  - ")
    );
}
