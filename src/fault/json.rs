//! Rules as JSON (`--faults FILE`, `PUT /faults`), with failCommand's names so that its users feel
//! at home: `failCommands`, `appName`, `errorCode`, `errorLabels`, `closeConnection`,
//! `blockConnection`/`blockTimeMS`, `times` (or `mode: {times: N}`), `writeConcernError`, and a
//! failCommand document's `data` part; plus mongotape's own `name`, `namespace`, `driver`,
//! `connection`, `shape`, `probability`, `forMS` (the text syntax's `for`), `action`, `codeName`,
//! `errmsg`.
//!
//! The document is a list of rules, or `{"rules": [...]}`; a rule may also be a string in the
//! text syntax of [`super::parse`].

use super::error::FaultError;
use super::parse::parse_rule;
use super::rule::{Action, ErrorSpec, Matcher, Rule};
use serde_json::{Map, Value};

/// Parses a JSON document of rules.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, FaultError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| FaultError::Json {
        what: format!("not JSON: {e}"),
    })?;
    let list = match &doc {
        Value::Array(list) => list,
        Value::Object(o) => match o.get("rules") {
            Some(Value::Array(list)) => list,
            _ => return Err(json_err("expected a list of rules or {\"rules\": [...]}")),
        },
        _ => return Err(json_err("expected a list of rules or {\"rules\": [...]}")),
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => parse_rule(s),
            Value::Object(o) => rule(o).map_err(|what| json_err(&format!("rule {i}: {what}"))),
            _ => Err(json_err(&format!(
                "rule {i}: expected an object or a string"
            ))),
        })
        .collect()
}

fn json_err(what: &str) -> FaultError {
    FaultError::Json { what: what.into() }
}

fn text(o: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn int(o: &Map<String, Value>, key: &str) -> Result<Option<i64>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be an integer")),
    }
}

fn unsigned(o: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    int(o, key)?
        .map(|n| u64::try_from(n).map_err(|_| format!("`{key}` must not be negative")))
        .transpose()
}

fn strings(o: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("`{key}` must be a list of strings")),
        Some(_) => Err(format!("`{key}` must be a list of strings")),
    }
}

/// A failCommand document (`{configureFailPoint, mode, data}`) flattened: `data`'s fields and
/// `mode.times` on top.
fn flatten(o: &Map<String, Value>) -> Map<String, Value> {
    let mut flat = o.clone();
    if let Some(Value::Object(data)) = o.get("data") {
        for (k, v) in data {
            flat.insert(k.clone(), v.clone());
        }
    }
    if let Some(Value::Object(mode)) = o.get("mode") {
        if let Some(t) = mode.get("times") {
            flat.insert("times".into(), t.clone());
        }
    }
    flat
}

fn rule(o: &Map<String, Value>) -> Result<Rule, String> {
    let o = &flatten(o);
    let matcher = Matcher {
        commands: strings(o, "failCommands")?,
        namespace: text(o, "namespace")?,
        app: text(o, "appName")?,
        driver: text(o, "driver")?,
        connection: unsigned(o, "connection")?,
        shape: text(o, "shape")?,
    };
    let probability = match o.get("probability") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(p) if (0.0..=1.0).contains(&p) => Some(p),
            _ => return Err("`probability` must be a number between 0 and 1".into()),
        },
    };
    let block = o.get("blockConnection").and_then(Value::as_bool) == Some(true);
    let block_ms = unsigned(o, "blockTimeMS")?.filter(|_| block || o.contains_key("action"));
    let (action, block_ms) = action(o, block_ms)?;
    Ok(Rule {
        name: text(o, "name")?,
        matcher,
        times: unsigned(o, "times")?,
        probability,
        for_ms: unsigned(o, "forMS")?,
        block_ms,
        action,
    })
}

fn error_spec(o: &Map<String, Value>, code: Option<i64>) -> Result<ErrorSpec, String> {
    let code = code.ok_or("this action needs `errorCode`")?;
    Ok(ErrorSpec {
        code: i32::try_from(code).map_err(|_| "`errorCode` is out of range")?,
        code_name: text(o, "codeName")?,
        labels: strings(o, "errorLabels")?,
        message: text(o, "errmsg")?,
    })
}

/// The action: `action` when given, else failCommand's meaning (closeConnection: close before
/// forwarding; errorCode: an error; writeConcernError; blockConnection alone: a delay).
fn action(o: &Map<String, Value>, block_ms: Option<u64>) -> Result<(Action, Option<u64>), String> {
    let code = int(o, "errorCode")?;
    if let Some(Value::Object(wce)) = o.get("writeConcernError") {
        let spec = ErrorSpec {
            code: int(wce, "code")?
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(64),
            code_name: text(wce, "codeName")?.or(Some("WriteConcernFailed".into())),
            labels: strings(o, "errorLabels")?,
            message: text(wce, "errmsg")?,
        };
        return Ok((Action::WriteConcernError(spec), block_ms));
    }
    let Some(name) = text(o, "action")? else {
        if o.get("closeConnection").and_then(Value::as_bool) == Some(true) {
            return Ok((Action::CloseBefore, block_ms));
        }
        if code.is_some() {
            return Ok((Action::Error(error_spec(o, code)?), block_ms));
        }
        if let Some(ms) = block_ms {
            return Ok((Action::DelayRequest(ms), None));
        }
        return Err(
            "no action: give `action`, `errorCode`, `closeConnection` or \
                    `blockConnection` with `blockTimeMS`"
                .into(),
        );
    };
    let ms = || -> Result<u64, String> {
        unsigned(o, "ms")?
            .or(block_ms)
            .ok_or_else(|| "this action needs `ms`".to_string())
    };
    let action = match name.as_str() {
        "error" => Action::Error(error_spec(o, code)?),
        "reply_error" => Action::ReplyError(error_spec(o, code)?),
        "write_concern_error" => Action::WriteConcernError(ErrorSpec {
            code: code.and_then(|c| i32::try_from(c).ok()).unwrap_or(64),
            code_name: text(o, "codeName")?.or(Some("WriteConcernFailed".into())),
            labels: strings(o, "errorLabels")?,
            message: text(o, "errmsg")?,
        }),
        "close_after" => Action::CloseAfter,
        "close_before" => Action::CloseBefore,
        "stall" => Action::Stall,
        "delay_request" => return Ok((Action::DelayRequest(ms()?), None)),
        "delay_reply" => return Ok((Action::DelayReply(ms()?), None)),
        other => return Err(format!("unknown action `{other}`")),
    };
    Ok((action, block_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failcommand_names_map_to_rules() {
        let rules = parse_rules(
            r#"{"rules": [
              {"failCommands": ["insert"], "appName": "shop", "errorCode": 10107,
               "errorLabels": ["RetryableWriteError"], "times": 2},
              {"configureFailPoint": "failCommand", "mode": {"times": 1},
               "data": {"failCommands": ["find"], "closeConnection": true}},
              {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 300},
              {"failCommands": ["update"], "writeConcernError": {"code": 91}},
              {"action": "close_after", "namespace": "shop.orders", "probability": 0.25, "forMS": 2000},
              "command=delete -> stall"
            ]}"#,
        )
        .unwrap();
        assert_eq!(rules.len(), 6);
        assert!(
            matches!(&rules[0].action, Action::Error(e) if e.code == 10107 && e.labels.len() == 1)
        );
        assert_eq!(
            (rules[0].times, rules[0].matcher.app.as_deref()),
            (Some(2), Some("shop"))
        );
        assert_eq!(
            (&rules[1].action, rules[1].times),
            (&Action::CloseBefore, Some(1))
        );
        assert_eq!(rules[2].action, Action::DelayRequest(300));
        assert!(matches!(&rules[3].action, Action::WriteConcernError(e) if e.code == 91));
        assert_eq!(
            (rules[4].probability, rules[4].for_ms),
            (Some(0.25), Some(2000))
        );
        assert_eq!(rules[5].action, Action::Stall);
        for bad in [
            "{}",
            "[1]",
            "[{\"times\": 1}]",
            "[{\"action\": \"error\"}]",
            "nope",
        ] {
            assert!(
                matches!(parse_rules(bad), Err(FaultError::Json { .. })),
                "{bad}"
            );
        }
    }
}
