//! `mongotape inspect` and `mongotape cat` on the sample captures, and on broken files.

use mongotape::capture::{CaptureReader, CaptureWriter};
use std::path::PathBuf;
use std::process::{Command, Output};

fn mongotape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mongotape"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn inspect_json_names_drivers_commands_and_namespaces() {
    let out = mongotape(&["inspect", "--json", "captures/mongosh-zlib.mtape"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["complete"], true);
    assert!(v["compression_ratio"].as_f64().unwrap() > 1.0);
    assert!(v["by_command"]["insert"]["requests"].as_u64().unwrap() > 0);
    assert!(
        v["by_namespace"]["fixtures.blogs"]["messages"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        v["compressed_by_compressor"]["zlib"]["messages"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        v["requests_by_opcode"]["OP_QUERY"]["messages"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let drivers = v["connections"].as_array().unwrap();
    assert!(drivers.iter().any(|c| c["driver"]["application"]
        .as_str()
        .unwrap_or("")
        .contains("mongosh")));

    let text = stdout(&mongotape(&["inspect", "captures/php.mtape"]));
    for needle in [
        "By command",
        "By namespace",
        "By opcode",
        "complete (clean end record)",
        "PHP",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[test]
fn cat_filters_by_command_namespace_and_connection() {
    let out = stdout(&mongotape(&[
        "cat",
        "--command",
        "getMore",
        "captures/pymongo.mtape",
    ]));
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 10, "{} lines", lines.len());
    assert!(lines.iter().all(|l| l["command"] == "getMore"));
    // Replies follow their request's command.
    assert!(lines
        .iter()
        .any(|l| l["dir"] == "reply" && l["body"]["cursor"]["nextBatch"].is_array()));
    let first = &lines[0]["body"];
    assert_eq!(
        first.as_object().unwrap().keys().next().unwrap(),
        "getMore",
        "field order kept"
    );

    let out = stdout(&mongotape(&[
        "cat",
        "--ns",
        "fixtures.blogs",
        "--no-body",
        "captures/php.mtape",
    ]));
    assert!(!out.is_empty());
    for l in out.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["ns"], "fixtures.blogs");
        assert!(v.get("body").is_none());
    }
    let out = stdout(&mongotape(&[
        "cat",
        "--conn",
        "2",
        "--events",
        "captures/mongosh.mtape",
    ]));
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 3);
    assert!(lines.iter().all(|l| l["conn"] == 2));
    assert!(lines.iter().any(|l| l["event"] == "open"));
    assert!(lines.iter().any(|l| l["event"] == "client_metadata"));
}

#[test]
fn a_cut_capture_prints_what_it_can_then_fails_with_the_offset() {
    // The sample capture rewritten with a flush every 20 records, as a long recording would be.
    let dir = tempfile::tempdir().unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/pymongo.mtape");
    let mut reader = CaptureReader::open(&fixture).unwrap();
    let meta = reader.metadata().clone();
    let mut writer = CaptureWriter::new(Vec::new(), &meta, 1).unwrap();
    for (i, r) in (&mut reader).enumerate() {
        writer.write(&r.unwrap()).unwrap();
        if i % 20 == 19 {
            writer.flush().unwrap();
        }
    }
    let src = writer.finish().unwrap();
    let cut = dir.path().join("cut.mtape");
    std::fs::write(&cut, &src[..src.len() * 2 / 3]).unwrap();
    let cut = cut.to_str().unwrap();
    let out = mongotape(&["inspect", cut]);
    assert_eq!(out.status.code(), Some(3));
    let text = stdout(&out);
    assert!(
        text.contains("read stopped early: capture is truncated at offset"),
        "{text}"
    );
    assert!(text.contains("By command"));
    let out = mongotape(&["cat", "--no-body", cut]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stdout(&out).lines().count() > 20);
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"));

    let not = dir.path().join("not.mtape");
    std::fs::write(&not, b"just some text").unwrap();
    let out = mongotape(&["inspect", not.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a mongotape capture"));
}

/// The first reply line of `cat` on the pymongo sample (the server's handshake reply), parsed.
fn first_reply(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["cat", "captures/pymongo.mtape", "-n", "4"];
    args.extend(extra);
    let out = mongotape(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    let stream = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
    let lines: Vec<serde_json::Value> = stream.map(Result::unwrap).collect();
    assert_eq!(lines.len(), 4, "{text}");
    lines.into_iter().find(|l| l["dir"] == "reply").unwrap()
}

#[test]
fn cat_canonical_keeps_every_bson_type_as_bsondump_does() {
    let relaxed = first_reply(&[]);
    let canonical = first_reply(&["--canonical"]);
    let (r, c) = (&relaxed["body"], &canonical["body"]);
    // Double, Int64, Int32, Date and ObjectId of the recorded hello reply.
    assert_eq!(r["ok"], serde_json::json!(1.0), "{r}");
    assert_eq!(c["ok"], serde_json::json!({"$numberDouble": "1.0"}), "{c}");
    assert_eq!(r["topologyVersion"]["counter"], serde_json::json!(0), "{r}");
    assert_eq!(
        c["topologyVersion"]["counter"],
        serde_json::json!({"$numberLong": "0"}),
        "{c}"
    );
    assert!(r["maxWireVersion"].is_u64(), "{r}");
    assert!(c["maxWireVersion"]["$numberInt"].is_string(), "{c}");
    let ms = c["localTime"]["$date"]["$numberLong"]
        .as_str()
        .expect("a canonical date");
    assert!(ms.parse::<i64>().unwrap() > 1_700_000_000_000, "{c}");
    assert!(
        r["localTime"]["$date"].as_str().unwrap().ends_with('Z'),
        "{r}"
    );
    let oid = c["topologyVersion"]["processId"]["$oid"].as_str().unwrap();
    assert!(
        oid.len() == 24 && oid.chars().all(|ch| ch.is_ascii_hexdigit()),
        "{c}"
    );

    // --pretty: the same records, indented over several lines each.
    let pretty = first_reply(&["--canonical", "--pretty"]);
    assert_eq!(pretty, canonical);
    let out = mongotape(&["cat", "captures/pymongo.mtape", "-n", "1", "--pretty"]);
    assert!(stdout(&out).lines().count() > 5 && stdout(&out).starts_with("{\n  \""));
}
