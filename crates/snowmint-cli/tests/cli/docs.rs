//! The examples of the README and docs/cli.md, run: every `$ snowmint ...`
//! line in a `text` block is run as a user would type it, and what it prints
//! (stdout, then stderr) must be the lines that follow it, up to the next
//! `$ ` line or the end of the block. A line `...` stands for any lines, so
//! an example may show only the start and the end of a long output.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::support::snowmint;

/// One example: the arguments, what it reads on stdin, what it must print.
struct Example {
    place: String,
    args: Vec<String>,
    stdin: Option<String>,
    expected: Vec<String>,
}

/// The examples of one Markdown file.
fn examples(file: &str) -> Vec<Example> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {file}: {e}"));
    let mut found = Vec::new();
    let mut in_text = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(fence) = line.strip_prefix("```") {
            in_text = !in_text && fence == "text";
            continue;
        }
        if !in_text {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            let (stdin, command) = match command.split_once(" | ") {
                Some((feed, rest)) => (Some(printf(feed, file, n + 1)), rest),
                None => (None, command),
            };
            let args: Vec<String> = command.split_whitespace().map(String::from).collect();
            assert_eq!(
                args.first().map(String::as_str),
                Some("snowmint"),
                "{file}:{}: an example runs snowmint",
                n + 1
            );
            found.push(Example {
                place: format!("{file}:{}", n + 1),
                args: args[1..].to_vec(),
                stdin,
                expected: Vec::new(),
            });
        } else if let Some(example) = found.last_mut().filter(|_| in_text) {
            example.expected.push(line.trim_end().to_string());
        }
    }
    // Lines after a block's last example that belong to no command cannot
    // occur: a block without `$ ` lines adds nothing, and an example's
    // output runs to the end of its block.
    found
}

/// `printf 'TEXT'` with `\n` escapes, the one feeder the examples use.
fn printf(feed: &str, file: &str, line: usize) -> String {
    let text = feed
        .strip_prefix("printf '")
        .and_then(|rest| rest.strip_suffix('\''))
        .unwrap_or_else(|| panic!("{file}:{line}: only `printf '...' | snowmint` is understood"));
    text.replace("\\n", "\n")
}

/// Whether `actual` is `expected`, where a `...` line in `expected` matches
/// any run of lines (including none).
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, more)| line.trim_end() == first && matches(rest, more)),
    }
}

fn run(example: &Example) {
    let mut cmd = snowmint();
    cmd.args(&example.args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run snowmint");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(example.stdin.as_deref().unwrap_or("").as_bytes())
        .expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for snowmint");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = example.expected.clone();
    while expected.last().is_some_and(String::is_empty) {
        expected.pop();
    }
    let lines: Vec<&str> = printed.trim_end().lines().collect();
    assert!(
        matches(&expected, &lines),
        "{}: `snowmint {}` printed\n{printed}\nbut the docs say\n{}",
        example.place,
        example.args.join(" "),
        expected.join("\n")
    );
}

#[test]
fn readme_examples_print_what_the_readme_says() {
    let found = examples("README.md");
    assert!(found.len() >= 2, "the README shows at least two commands");
    found.iter().for_each(run);
}

#[test]
fn cli_reference_examples_print_what_it_says() {
    let found = examples("docs/cli.md");
    assert!(found.len() >= 5, "docs/cli.md shows its commands");
    found.iter().for_each(run);
}

#[test]
fn the_matcher_can_fail() {
    let lines = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&lines(&["a", "...", "c"]), &["a", "b", "b", "c"]));
    assert!(matches(&lines(&["a", "..."]), &["a"]));
    assert!(!matches(&lines(&["a", "...", "c"]), &["a", "b"]));
    assert!(!matches(&lines(&["a"]), &["a", "b"]));
    assert!(!matches(&lines(&["b"]), &["a"]));
}
