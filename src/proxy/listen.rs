//! Which address each upstream member is served on. `--listen` takes one of three forms:
//!
//! - one address, `127.0.0.1:27018`: the base. Members get consecutive ports in the order they are
//!   found (27018, 27019, ...); with port 0 each gets an ephemeral port of its own;
//! - a list, `127.0.0.1:27018,127.0.0.1:28018`: one address per member, in order;
//! - mappings, `db0.example.net:27017=0.0.0.0:27018,...`: each member its address.

use crate::net::HostPort;
use crate::wire::hello::address_key;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ListenError {
    #[error("--listen {spec:?}: {detail}")]
    Invalid { spec: String, detail: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenPlan {
    Base(HostPort),
    List(Vec<HostPort>),
    /// Member key (see [`address_key`]) and the address it is served on.
    Mapped(Vec<(String, HostPort)>),
}

impl ListenPlan {
    /// Reads the `--listen` values (each may itself be a comma-separated list).
    pub fn parse(values: &[String]) -> Result<ListenPlan, ListenError> {
        let items: Vec<&str> = values
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let invalid = |spec: &str, detail: &str| ListenError::Invalid {
            spec: spec.to_owned(),
            detail: detail.to_owned(),
        };
        let addr = |s: &str| {
            HostPort::parse(s)
                .filter(|_| s.contains(':'))
                .ok_or_else(|| invalid(s, "expected HOST:PORT"))
        };
        if items.is_empty() {
            return Err(invalid("", "no address given"));
        }
        let mapped = items.iter().filter(|s| s.contains('=')).count();
        if mapped == items.len() {
            let mut pairs = Vec::new();
            for item in &items {
                let (member, listen) = item.split_once('=').expect("counted");
                let member_addr = HostPort::parse(member)
                    .ok_or_else(|| invalid(member, "expected MEMBER_HOST[:PORT]"))?;
                let key = address_key(&member_addr.to_string());
                if pairs.iter().any(|(k, _)| *k == key) {
                    return Err(invalid(item, "member mapped twice"));
                }
                pairs.push((key, addr(listen)?));
            }
            return Ok(ListenPlan::Mapped(pairs));
        }
        if mapped > 0 {
            return Err(invalid(
                &items.join(","),
                "either every entry is MEMBER=LISTEN or none is",
            ));
        }
        let list = items
            .iter()
            .map(|s| addr(s))
            .collect::<Result<Vec<_>, _>>()?;
        if list.len() == 1 {
            Ok(ListenPlan::Base(list.into_iter().next().expect("one")))
        } else {
            Ok(ListenPlan::List(list))
        }
    }

    /// Where the member that is the `index`-th (from 0) to get a listener is served, or `None`
    /// when the plan has no address for it.
    pub fn address_for(&self, index: usize, member: &HostPort) -> Option<HostPort> {
        match self {
            ListenPlan::Base(base) if base.port == 0 => Some(base.clone()),
            ListenPlan::Base(base) => {
                let port = u16::try_from(usize::from(base.port).checked_add(index)?).ok()?;
                Some(HostPort {
                    host: base.host.clone(),
                    port,
                })
            }
            ListenPlan::List(list) => list.get(index).cloned(),
            ListenPlan::Mapped(pairs) => {
                let key = address_key(&member.to_string());
                pairs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, a)| a.clone())
            }
        }
    }
}

/// This machine's name, for the capture's metadata and a listener bound to every interface.
pub(super) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(s: &str) -> HostPort {
        HostPort::parse(s).unwrap()
    }

    fn plan(s: &str) -> Result<ListenPlan, ListenError> {
        ListenPlan::parse(&[s.to_owned()])
    }

    #[test]
    fn the_three_forms() {
        let base = plan("127.0.0.1:27018").unwrap();
        assert_eq!(base.address_for(2, &hp("x:1")), Some(hp("127.0.0.1:27020")));
        assert_eq!(
            plan("127.0.0.1:0").unwrap().address_for(5, &hp("x:1")),
            Some(hp("127.0.0.1:0"))
        );
        assert_eq!(
            plan("127.0.0.1:65535").unwrap().address_for(1, &hp("x:1")),
            None
        );
        let list = ListenPlan::parse(&["a:1,b:2".into(), "c:3".into()]).unwrap();
        assert_eq!(list.address_for(2, &hp("x:1")), Some(hp("c:3")));
        assert_eq!(list.address_for(3, &hp("x:1")), None);
        let mapped = plan("DB0:27017=0.0.0.0:1, db1=0.0.0.0:2").unwrap();
        assert_eq!(
            mapped.address_for(9, &hp("db0:27017")),
            Some(hp("0.0.0.0:1"))
        );
        assert_eq!(
            mapped.address_for(0, &hp("db1:27017")),
            Some(hp("0.0.0.0:2"))
        );
        assert_eq!(mapped.address_for(0, &hp("db2:27017")), None);
    }

    #[test]
    fn bad_forms_are_errors() {
        for bad in [
            "",
            "nohostport",
            "a:1,b=c:2",
            "a:1=b",
            "a:x",
            "a:1=b:2,a:1=c:3",
        ] {
            assert!(plan(bad).is_err(), "{bad}");
        }
    }
}
