//! Fault rules (`record --fault`, `--faults FILE`, `PUT /faults`): the text parser and the JSON
//! one over any input.

use super::mode;
use mongotape::fault::json::parse_rules;
use mongotape::fault::parse::parse_rule;
use mongotape::fault::FaultError;

/// Even first byte: the rest as a text rule; odd: as a JSON document of rules. Asserts: no
/// panic; a parse error names a character inside the rule (or just past its end); a text rule
/// that parses prints back as text that parses to the same rule.
pub fn fault_rule(data: &[u8]) {
    let (m, rest) = mode(data);
    let text = String::from_utf8_lossy(rest);
    if m % 2 == 1 {
        let _ = parse_rules(&text);
        return;
    }
    match parse_rule(&text) {
        Ok(rule) => {
            let printed = rule.to_string();
            let again = parse_rule(&printed)
                .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which fails: {e}"));
            assert_eq!(again, rule, "{text:?} printed as {printed:?}");
        }
        Err(FaultError::Parse { position, .. }) => {
            let chars = text.chars().count();
            assert!(
                position >= 1 && position <= chars.max(4096) + 1,
                "{text:?}: position {position} of {chars}"
            );
        }
        Err(e) => panic!("{text:?}: a text rule failed as {e}"),
    }
}
