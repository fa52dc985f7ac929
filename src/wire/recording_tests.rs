use super::*;

/// An OP_MSG `{ping: 1}` with the given ids.
fn ping(request_id: i32, response_to: i32) -> Vec<u8> {
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    let doc = bson::rawdoc! { "ping": 1, "$db": "admin" };
    OpMsg::with_body(doc, MsgFlags::empty()).encode(request_id, response_to)
}

fn packet(code: Option<u8>, strings: &[&str], message: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 4];
    if let Some(c) = code {
        p.push(c);
    }
    p.extend_from_slice(&7u64.to_le_bytes());
    for s in strings {
        p.extend_from_slice(s.as_bytes());
        p.push(0);
    }
    p.extend_from_slice(&1_700_000_000_123u64.to_le_bytes());
    p.extend_from_slice(&42u64.to_le_bytes());
    p.extend_from_slice(message);
    let n = p.len() as u32;
    p[..4].copy_from_slice(&n.to_le_bytes());
    p
}

const TEXT: &str = r#"{ id: 7, remote: "127.0.0.1:51234", local: "127.0.0.1:27017" }"#;

#[test]
fn each_framing_reads_its_own_packet_and_no_other() {
    let m = ping(5, 0);
    let addresses = packet(None, &["127.0.0.1:27017", "10.0.0.9:40000"], &m);
    let session = packet(None, &[TEXT], &m);
    let events = packet(Some(0), &[TEXT], &m);
    let p = parse(&addresses, Framing::Addresses).unwrap();
    assert_eq!((p.remote, p.local), ("10.0.0.9:40000", "127.0.0.1:27017"));
    let p = parse(&session, Framing::Session).unwrap();
    assert_eq!(
        (p.id, p.remote, p.time, p.order),
        (7, "127.0.0.1:51234", 1_700_000_000_123, 42)
    );
    assert_eq!(p.message, &m[..]);
    assert_eq!(parse(&events, Framing::Events).unwrap().code, Some(0));
    for (bytes, wrong) in [
        (&addresses, [Framing::Session, Framing::Events]),
        (&session, [Framing::Addresses, Framing::Events]),
        (&events, [Framing::Addresses, Framing::Session]),
    ] {
        for f in wrong {
            assert!(parse(bytes, f).is_err(), "{f:?}");
        }
    }
}

#[test]
fn codes_are_checked_against_what_the_packet_carries() {
    let request = ping(5, 0);
    let reply = ping(6, 5);
    let p = |code, m: &[u8]| packet(Some(code), &[TEXT], m);
    let ev =
        |bytes: &Vec<u8>, codes| event_of(&parse(bytes, Framing::Events).unwrap(), Some(codes));
    assert_eq!(ev(&p(0, &reply), Codes::Three), Ok(Event::Message));
    assert!(ev(&p(0, &reply), Codes::Four).is_err());
    assert_eq!(ev(&p(1, &reply), Codes::Four), Ok(Event::Reply));
    assert!(ev(&p(1, &reply), Codes::Three).is_err());
    assert_eq!(ev(&p(1, &[]), Codes::Three), Ok(Event::SessionStart));
    assert_eq!(ev(&p(2, &[]), Codes::Four), Ok(Event::SessionStart));
    assert_eq!(ev(&p(2, &[]), Codes::Three), Ok(Event::SessionEnd));
    assert_eq!(ev(&p(3, &[]), Codes::Four), Ok(Event::SessionEnd));
    assert!(ev(&p(3, &[]), Codes::Three).is_err());
    assert!(ev(&p(0, &[]), Codes::Four).is_err());
    assert!(parse(&p(4, &request), Framing::Events).is_err());
}

#[test]
fn lying_lengths_and_cut_packets_are_misfits_not_panics() {
    let good = packet(Some(0), &[TEXT], &ping(5, 0));
    for cut in 0..good.len() {
        let mut bytes = good[..cut].to_vec();
        if bytes.len() >= 4 {
            bytes[..4].copy_from_slice(&(cut as u32).to_le_bytes());
        }
        for f in Framing::ALL {
            let codes = (f == Framing::Events).then_some(Codes::Four);
            let read = parse(&bytes, f).and_then(|p| event_of(&p, codes));
            assert!(read.is_err(), "cut at {cut}");
        }
    }
    assert!(declared_len(3u32.to_le_bytes(), Framing::Events).is_err());
    assert!(declared_len(u32::MAX.to_le_bytes(), Framing::Session).is_err());
    let mut lying = good.clone();
    lying[40] ^= 0xff;
    let _ = parse(&lying, Framing::Events);
}

#[test]
fn session_texts_as_servers_write_them() {
    let s = session_text(TEXT).unwrap();
    assert_eq!(
        (s.id, s.remote, s.local),
        (7, "127.0.0.1:51234", "127.0.0.1:27017")
    );
    let s = session_text(r#"{ id: NumberLong(12), local: "[::1]:27017", remote: "[::1]:5000" }"#)
        .unwrap();
    assert_eq!((s.id, s.remote, s.local), (12, "[::1]:5000", "[::1]:27017"));
    for bad in [
        "",
        "{}",
        "{ id: x, remote: \"a:1\", local: \"b:2\" }",
        "{ id: 1, remote: \"a:1\" }",
    ] {
        assert_eq!(session_text(bad), None, "{bad}");
    }
}
