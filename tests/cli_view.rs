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

/// Drivers as people name them in the text (inspect's connections, analyze's tables), as
/// written in the JSON.
#[test]
fn driver_names_read_as_people_say_them_in_text_and_raw_in_json() {
    for (capture, raw, people) in [
        (
            "captures/pymongo.mtape",
            "PyMongo|c",
            "pymongo 4.20.0 (C extension)",
        ),
        (
            "captures/mongosh.mtape",
            "nodejs|mongosh",
            "mongosh 2.12.0 on Node.js driver 7.9.0",
        ),
        (
            "captures/php.mtape",
            "ext-mongodb:PHP",
            "PHP ext-mongodb 1.15.0 on libmongoc 1.23.1",
        ),
    ] {
        let inspect = stdout(&mongotape(&["inspect", capture]));
        assert!(inspect.contains(people), "{capture}: {inspect}");
        assert!(!inspect.contains(raw), "{capture}: {inspect}");
        let analyze = stdout(&mongotape(&["analyze", capture]));
        assert!(analyze.contains(people), "{capture}: {analyze}");
        let json = stdout(&mongotape(&["inspect", "--json", capture]));
        assert!(json.contains(raw), "{capture}: the JSON keeps {raw}");
    }
}

/// `cat`'s `t` and `inspect`'s duration share one origin: the capture's first record.
#[test]
fn cat_t_counts_from_the_first_record_as_inspect_duration_does() {
    let capture = "captures/mongosh.mtape";
    let lines: Vec<serde_json::Value> =
        stdout(&mongotape(&["cat", capture, "--events", "--no-body"]))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let first_ns = lines[0]["ts_ns"].as_u64().unwrap();
    let mut last_t: f64 = 0.0;
    for line in lines.iter().filter(|l| l.get("t").is_some()) {
        let t = line["t"].as_f64().unwrap();
        let ts = line["ts_ns"].as_u64().unwrap();
        assert!((t - (ts - first_ns) as f64 / 1e9).abs() < 1e-6, "{line}");
        last_t = last_t.max(t);
    }
    let inspect: serde_json::Value =
        serde_json::from_str(&stdout(&mongotape(&["inspect", "--json", capture]))).unwrap();
    let duration = inspect["duration_s"].as_f64().unwrap();
    assert!(
        last_t > 0.0 && last_t <= duration + 1e-6,
        "last t {last_t} against duration {duration}"
    );
    let text = stdout(&mongotape(&["inspect", capture]));
    assert!(text.contains("cat's t counts from the first"), "{text}");
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

/// The pymongo sample with, before its end record, an insert whose document nests 10,000 levels
/// and a hello's client metadata nested 20,000 levels, each between two of its messages.
fn with_nested_messages(dir: &std::path::Path) -> (PathBuf, usize) {
    use mongotape::capture::{Record, RecordKind};
    use mongotape::wire::{depth, MsgFlags, OpMsg, Section};
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/pymongo.mtape");
    let mut reader = CaptureReader::open(&fixture).unwrap();
    let meta = reader.metadata().clone();
    let records: Vec<Record> = (&mut reader).map(Result::unwrap).collect();
    let messages = records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .count();
    let deep = bson::RawDocumentBuf::from_bytes(depth::nested(10_000)).unwrap();
    let insert = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(
            bson::rawdoc! {"insert": "deep", "documents": [deep], "$db": "t"},
        )],
        checksum: None,
    }
    .encode(999_999, 0);
    let (conn, ts) = (records[2].conn_id, records[2].ts_ns);
    let mut writer = CaptureWriter::new(Vec::new(), &meta, 1).unwrap();
    for (i, r) in records.iter().enumerate() {
        if i == 3 {
            let metadata = depth::nested(20_000);
            writer
                .write(&Record::new(RecordKind::ClientMetadata, conn, ts, metadata))
                .unwrap();
            writer
                .write(&Record::new(RecordKind::Request, conn, ts, insert.clone()))
                .unwrap();
        }
        writer.write(r).unwrap();
    }
    let path = dir.join("nested.mtape");
    std::fs::write(&path, writer.finish().unwrap()).unwrap();
    (path, messages + 1)
}

#[test]
fn cat_inspect_and_analyze_print_a_deeply_nested_message_as_an_error_between_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let (path, messages) = with_nested_messages(dir.path());
    let path = path.to_str().unwrap();
    let error = serde_json::json!({"$error": "BSON document nests deeper than 200 levels"});
    for mode in [&[][..], &["--pretty"], &["--canonical"], &["--events"]] {
        let mut args = vec!["cat", path];
        args.extend(mode);
        let out = mongotape(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "cat {mode:?}: {stderr}");
        let text = stdout(&out);
        let lines: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let printed = lines.iter().filter(|l| l.get("dir").is_some()).count();
        assert_eq!(printed, messages, "cat {mode:?}: every message printed");
        let deep: Vec<_> = lines.iter().filter(|l| l["body"] == error).collect();
        assert_eq!(deep.len(), 1, "cat {mode:?}");
        assert_eq!(deep[0]["op"], "OP_MSG");
        let with_events = mode == ["--events"];
        if with_events {
            assert!(lines
                .iter()
                .any(|l| l["event"] == "client_metadata" && l["data"] == error));
        }
        let counted = if with_events { 2 } else { 1 };
        assert!(
            stderr.contains(&format!(
                "{counted} document(s) nest deeper than 200 levels: printed as"
            )),
            "cat {mode:?}: {stderr}"
        );
    }
    let out = mongotape(&["inspect", "--json", path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["by_command"]["insert"]["requests"].as_u64().unwrap() >= 1);
    assert_eq!(v["complete"], true);
    let out = mongotape(&["analyze", "--json", path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["capture"]["records"].as_u64().unwrap() as usize > messages);
}

#[test]
fn a_folder_with_damaged_segments_names_each_reads_the_rest_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/pymongo.mtape");
    let seg = |n: u32| dir.path().join(format!("rec-{n:06}.mtape"));
    let bytes = std::fs::read(&fixture).unwrap();
    std::fs::write(seg(1), &bytes).unwrap();
    std::fs::write(seg(2), &bytes[..bytes.len() / 2]).unwrap();
    assert!(Command::new("mkfifo")
        .arg(seg(3))
        .status()
        .unwrap()
        .success());
    std::fs::write(seg(4), &bytes).unwrap();
    std::fs::create_dir(seg(5)).unwrap();
    let folder = dir.path().to_str().unwrap();
    let whole = mongotape(&["inspect", "--json", fixture.to_str().unwrap()]);
    let whole: serde_json::Value = serde_json::from_str(&stdout(&whole)).unwrap();
    let out = mongotape(&["inspect", "--json", folder]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    for (n, what) in [
        (2, "truncated at offset"),
        (3, "is a FIFO"),
        (5, "is a directory"),
    ] {
        let name = seg(n).display().to_string();
        assert!(
            stderr.contains(&format!("segment {name}: ")) && stderr.contains(what),
            "segment {n} ({what}) not named: {stderr}"
        );
    }
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["read_errors"].as_array().unwrap().len(),
        3,
        "{}",
        v["read_errors"]
    );
    let inserts = |v: &serde_json::Value| v["by_command"]["insert"]["requests"].as_u64().unwrap();
    assert!(
        inserts(&v) >= 2 * inserts(&whole),
        "segments 1 and 4 read whole"
    );
    for reader in [&["cat", "--no-body"][..], &["analyze"]] {
        let mut args = reader.to_vec();
        args.push(folder);
        let out = mongotape(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{reader:?}: {stderr}");
        assert!(stderr.contains("is a FIFO"), "{reader:?}: {stderr}");
    }
}

#[test]
fn a_capture_without_its_end_record_exits_3_in_every_reader() {
    use mongotape::capture::RecordKind;
    let dir = tempfile::tempdir().unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/pymongo.mtape");
    let mut reader = CaptureReader::open(&fixture).unwrap();
    let mut writer = CaptureWriter::new(Vec::new(), &reader.metadata().clone(), 1).unwrap();
    for r in &mut reader {
        let r = r.unwrap();
        if r.kind != RecordKind::End {
            writer.write(&r).unwrap();
        }
    }
    let path = dir.path().join("killed.mtape");
    std::fs::write(&path, writer.finish().unwrap()).unwrap();
    let path = path.to_str().unwrap();
    for args in [&["inspect", path][..], &["cat", path], &["analyze", path]] {
        let out = mongotape(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains("has no end record"), "{args:?}: {stderr}");
        assert!(!stdout(&out).is_empty(), "{args:?} printed what it read");
    }
    // `cat -n` stops before the end on purpose: not a damaged capture.
    assert_eq!(mongotape(&["cat", "-n", "3", path]).status.code(), Some(0));
    let text = stdout(&mongotape(&["inspect", path]));
    assert!(text.contains("no end record"), "{text}");
}

/// The pymongo sample with, before its end record, an insert whose document's string declares
/// more bytes than the document holds, and a hello's client metadata cut short.
fn with_malformed_documents(dir: &std::path::Path) -> PathBuf {
    use mongotape::capture::{Record, RecordKind};
    use mongotape::wire::{MsgFlags, OpMsg, Section};
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/pymongo.mtape");
    let mut reader = CaptureReader::open(&fixture).unwrap();
    let meta = reader.metadata().clone();
    let records: Vec<Record> = (&mut reader).map(Result::unwrap).collect();
    let mut insert = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(
            bson::rawdoc! {"insert": "bad", "documents": [{"a": "xyz"}], "$db": "t"},
        )],
        checksum: None,
    }
    .encode(999_999, 0);
    let at = insert.windows(4).position(|w| w == b"xyz\0").unwrap() - 4;
    insert[at..at + 4].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    let metadata = bson::rawdoc! {"driver": {"name": "x", "version": "1"}}
        .into_bytes()
        .split_off(3);
    let (conn, ts) = (records[2].conn_id, records[2].ts_ns);
    let mut writer = CaptureWriter::new(Vec::new(), &meta, 1).unwrap();
    for (i, r) in records.iter().enumerate() {
        if i == 3 {
            writer
                .write(&Record::new(
                    RecordKind::ClientMetadata,
                    conn,
                    ts,
                    metadata.clone(),
                ))
                .unwrap();
            writer
                .write(&Record::new(RecordKind::Request, conn, ts, insert.clone()))
                .unwrap();
        }
        writer.write(r).unwrap();
    }
    let path = dir.join("malformed.mtape");
    std::fs::write(&path, writer.finish().unwrap()).unwrap();
    path
}

/// Rust's Debug text of an error, as it leaked into messages: `IoError(Error { kind:
/// UnexpectedEof ...`, the bson crate's `Kind: Malformed BSON bytes`, pcap-parser's dump.
fn debug_text(text: &str) -> Option<&'static str> {
    [
        "Error {",
        "{ kind: ",
        "Kind:",
        "IoError",
        "MalformedBytes",
        "UnexpectedEof",
        "Some(",
        "Internal parser error",
    ]
    .into_iter()
    .find(|m| text.contains(m))
}

#[test]
fn malformed_documents_and_cut_files_are_said_in_words_not_debug_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_malformed_documents(dir.path());
    let path = path.to_str().unwrap();
    // As JSON says it: the key's quotes escaped.
    let said = r#"malformed BSON bytes at key \"a\": expected buffer to contain at least"#;
    for mode in [&[][..], &["--events"], &["--canonical"], &["--pretty"]] {
        let mut args = vec!["cat", path];
        args.extend(mode);
        let out = mongotape(&args);
        assert_eq!(out.status.code(), Some(0), "cat {mode:?}");
        let text = stdout(&out);
        assert!(text.contains(said), "cat {mode:?}: {text}");
        assert_eq!(debug_text(&text), None, "cat {mode:?}: {text}");
    }
    for args in [
        ["inspect", path],
        ["analyze", path],
        ["inspect", "--json"],
        ["analyze", "--json"],
    ] {
        let mut args = args.to_vec();
        if args.len() == 2 && args[1] == "--json" {
            args.push(path);
        }
        let out = mongotape(&args);
        let all = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {all}");
        assert_eq!(debug_text(&all), None, "{args:?}: {all}");
    }
    // A capture cut short, and a file that is no format import reads.
    let bytes = std::fs::read(path).unwrap();
    let cut = dir.path().join("cut.mtape");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut = cut.to_str().unwrap();
    let other = dir.path().join("other.bin");
    std::fs::write(&other, b"\x05\x00\x00\x00\x01").unwrap();
    let out_file = dir.path().join("o.mtape");
    let runs: [(&[&str], &str); 4] = [
        (&["cat", cut], "capture is truncated at offset"),
        (&["inspect", cut], "capture is truncated at offset"),
        (&["analyze", cut], "capture is truncated at offset"),
        (
            &[
                "import",
                other.to_str().unwrap(),
                "-o",
                out_file.to_str().unwrap(),
            ],
            "it starts with bytes 05 00 00 00 01;",
        ),
    ];
    for (args, expected) in runs {
        let out = mongotape(args);
        let all = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
        assert!(all.contains(expected), "{args:?}: {all}");
        assert_eq!(debug_text(&all), None, "{args:?}: {all}");
    }
}
