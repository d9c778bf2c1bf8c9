//! The `typeinfo-savepoint` binary on a real savepoint: every command, its exit status and
//! messages, on a sound and on a damaged savepoint; the input never changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{real_savepoint, tree};
use typeinfo_runtime::StateBackend;

/// Runs `typeinfo-savepoint <command> <dir> <rest...> [--output <out>]`.
fn tool(command: &str, dir: &Path, rest: &[&str], out: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_typeinfo-savepoint"));
    cmd.arg(command).arg(dir).args(rest);
    if let Some(out) = out {
        cmd.arg("--output").arg(out);
    }
    cmd.output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn every_command_on_a_sound_and_on_a_damaged_savepoint() {
    let work = tempfile::tempdir().unwrap();
    let (dir, _) = real_savepoint(work.path(), StateBackend::Heap);
    let before = tree(&dir);

    let o = tool("inspect", &dir, &[], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "epoch ",
        "max parallelism 128, 4 operators",
        "uid-minute-totals  \"Window\"  parallelism 2",
        "keyed state: key String, 2 files",
        "window-contents (aggregating): namespace typeinfo.runtime.TimeWindow, value test.Total",
        "uid-orders  \"Generator Source\"  parallelism 1",
        "test.Total { orders: u32, cents: i64 }",
    ] {
        assert!(text.contains(needle), "`{needle}` in\n{text}");
    }
    let o = tool("inspect", &dir, &["--key-groups"], None);
    assert!(stdout(&o).contains("        key group "), "{}", stdout(&o));

    let o = tool("verify", &dir, &[], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("ok: 9 files, 10 keyed entries"),
        "{}",
        stdout(&o)
    );

    let dump = |state: &str| {
        tool(
            "dump",
            &dir,
            &["--operator", "minute-totals", "--state", state],
            None,
        )
    };
    let o = dump("window-contents");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 5);
    assert!(lines
        .iter()
        .all(|l| l.starts_with("{\"key_group\":") && l.contains("\"value\":{\"orders\":")));
    let o = dump("nope");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("has no state `nope` (it has: window-contents, window-timers)"),
        "{}",
        stderr(&o)
    );

    // Writing commands: each into a new directory.
    for (args, out) in [
        (
            vec![
                "rename-uid",
                "--operator",
                "minute-totals",
                "--to",
                "totals",
            ],
            "renamed",
        ),
        (vec!["remove-operator", "--operator", "output"], "removed"),
        (
            vec!["set-max-parallelism", "--max-parallelism", "512"],
            "rescaled",
        ),
    ] {
        let out = work.path().join(out);
        let o = tool(args[0], &dir, &args[1..], Some(&out));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).starts_with("wrote "), "{}", stdout(&o));
        let o = tool("verify", &out, &[], None);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        // The same output again: refused, it exists.
        let o = tool(args[0], &dir, &args[1..], Some(&out));
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    }
    let o = tool("inspect", &work.path().join("rescaled"), &[], None);
    assert!(stdout(&o).contains("max parallelism 512"), "{}", stdout(&o));

    // Usage errors exit 2, with clap's message (which points to `--help`) or, for no
    // command at all, the help itself.
    for args in [
        vec![],
        vec!["frobnicate"],
        vec!["dump", "x", "--operator", "y"],
        vec!["inspect"],
        vec!["inspect", "a", "b"],
        vec![
            "set-max-parallelism",
            "x",
            "--max-parallelism",
            "many",
            "--output",
            "y",
        ],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_typeinfo-savepoint"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains("--help"), "{args:?}: {}", stderr(&o));
    }
    assert!(tree(&dir) == before, "a command changed its input");

    // A damaged keyed state file: every command exits 1 naming it; nothing is written.
    let kstate = dir.join("uid-minute-totals").join("subtask-0.kstate");
    let mut bytes = std::fs::read(&kstate).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&kstate, &bytes).unwrap();
    let damaged = tree(&dir);
    let out = work.path().join("never");
    for (args, writes) in [
        (vec!["inspect"], false),
        (vec!["verify"], false),
        (
            vec![
                "dump",
                "--operator",
                "minute-totals",
                "--state",
                "window-contents",
            ],
            false,
        ),
        (
            vec!["rename-uid", "--operator", "minute-totals", "--to", "t"],
            true,
        ),
        (vec!["set-max-parallelism", "--max-parallelism", "64"], true),
    ] {
        let o = tool(args[0], &dir, &args[1..], writes.then_some(out.as_path()));
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let message = stderr(&o);
        assert!(
            message.contains("subtask-0.kstate") && message.contains("checksum mismatch"),
            "{args:?}: {message}"
        );
        assert!(!message.contains("panicked"), "{message}");
        assert!(!out.exists());
    }
    assert!(tree(&dir) == damaged, "a command changed its input");
    let o = tool("inspect", Path::new("/nonexistent/savepoint"), &[], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no such checkpoint or savepoint"),
        "{}",
        stderr(&o)
    );
}
