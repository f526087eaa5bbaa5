//! Answering the server's requests: elicitation forms prompted on the terminal, sampling from
//! `--sampling-reply`, roots from `--root`.
//!
//! Elicitation (form mode), when stdin is a terminal: the message is shown, then each flat
//! property of `requestedSchema` in turn, with its title, description and type; the default,
//! if any, is shown in brackets and pressing Enter accepts it. Booleans take y/n (yes, no,
//! true, false); enums list their choices, answered by number or by value; numbers and
//! integers are checked and asked again when invalid. An empty answer to a field without a
//! default leaves an optional field out and asks a required field again. `!decline` declines
//! and `!cancel` cancels the whole form (end of input cancels too). When stdin is not a
//! terminal the request is declined (and a note is printed on stderr).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use mcp_runtime::{Handlers, RpcError};
use serde_json::{Map, Value, json};

/// The handler the CLI's client answers the server with.
pub fn handlers(sampling_reply: Option<String>, roots: &[String]) -> Handlers {
    let mut h = Handlers::new()
        .elicitation(|params| async move {
            if !std::io::stdin().is_terminal() {
                eprintln!(
                    "mcpc: declined the server's elicitation request ({}): stdin is not a terminal",
                    params.get("message").and_then(Value::as_str).unwrap_or("")
                );
                return Ok(json!({"action": "decline"}));
            }
            tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                ask_form(&params, &mut input, &mut std::io::stderr())
            })
            .await
            .map_err(|e| RpcError {
                code: -32603,
                message: format!("elicitation prompt failed: {e}"),
                data: None,
            })
        })
        .sampling(move |_params| {
            let reply = sampling_reply.clone();
            async move {
                match reply {
                    Some(text) => Ok(json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": text},
                        "model": "mcpc --sampling-reply",
                        "stopReason": "endTurn",
                    })),
                    None => Err(RpcError {
                        code: -1,
                        message: "sampling declined: mcpc was started without --sampling-reply"
                            .into(),
                        data: None,
                    }),
                }
            }
        });
    if !roots.is_empty() {
        h = h.roots(
            roots
                .iter()
                .map(|uri| (uri.clone(), root_name(uri)))
                .collect(),
        );
    }
    h
}

/// A root's name: the last segment of its path.
fn root_name(uri: &str) -> String {
    uri.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(uri)
        .to_owned()
}

/// One form at a time on the terminal.
static FORM: Mutex<()> = Mutex::new(());

/// The choices of an enum property: `(value, label)`.
fn choices(prop: &Value) -> Vec<(Value, String)> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| display(v));
                (v.clone(), label)
            })
            .collect();
    }
    if let Some(options) = prop.get("oneOf").and_then(Value::as_array) {
        return options
            .iter()
            .filter_map(|o| {
                let v = o.get("const")?.clone();
                let label = o
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| display(&v));
                Some((v, label))
            })
            .collect();
    }
    Vec::new()
}

fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What one answer to one field means.
enum Answer {
    Value(Value),
    Omit,
    Again(String),
}

fn interpret(text: &str, prop: &Value, required: bool) -> Answer {
    let kind = prop.get("type").and_then(Value::as_str).unwrap_or("string");
    let options = choices(prop);
    if text.is_empty() {
        return match prop.get("default") {
            Some(d) => Answer::Value(d.clone()),
            None if required => {
                Answer::Again("a value is required (or type !decline or !cancel)".into())
            }
            None => Answer::Omit,
        };
    }
    if !options.is_empty() {
        if let Ok(n) = text.parse::<usize>()
            && (1..=options.len()).contains(&n)
        {
            return Answer::Value(options[n - 1].0.clone());
        }
        return match options
            .iter()
            .find(|(v, label)| display(v) == text || label == text)
        {
            Some((v, _)) => Answer::Value(v.clone()),
            None => Answer::Again(format!("choose 1 to {} or type a value", options.len())),
        };
    }
    match kind {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Answer::Value(Value::Bool(true)),
            "n" | "no" | "false" => Answer::Value(Value::Bool(false)),
            _ => Answer::Again("answer y or n".into()),
        },
        "integer" => match text.parse::<i64>() {
            Ok(n) => Answer::Value(json!(n)),
            Err(_) => Answer::Again("not an integer".into()),
        },
        "number" => match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_number() => Answer::Value(v),
            _ => Answer::Again("not a number".into()),
        },
        _ => Answer::Value(Value::String(text.to_owned())),
    }
}

/// Asks the form of an `elicitation/create` request on `out`, reading answers from `input`;
/// returns the `ElicitResult`.
pub fn ask_form(params: &Value, input: &mut impl BufRead, out: &mut impl Write) -> Value {
    let _one_at_a_time = FORM.lock().unwrap_or_else(|e| e.into_inner());
    let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    let _ = writeln!(out, "\nThe server asks: {message}");
    let _ = writeln!(
        out,
        "  (Enter accepts the [default]; type !decline or !cancel to refuse the whole form)"
    );
    let mut content = Map::new();
    for (key, prop) in props {
        let is_required = required.contains(&key.as_str());
        let title = prop.get("title").and_then(Value::as_str).unwrap_or(key);
        let kind = prop.get("type").and_then(Value::as_str).unwrap_or("string");
        let options = choices(prop);
        let mut head = format!("  {title}");
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            head.push_str(&format!(" - {d}"));
        }
        head.push_str(&format!(
            " ({kind}{})",
            if is_required { ", required" } else { "" }
        ));
        for (i, (_, label)) in options.iter().enumerate() {
            let _ = writeln!(out, "    {}) {label}", i + 1);
        }
        let default = match (prop.get("default"), kind) {
            (Some(Value::Bool(true)), "boolean") => " [Y/n]".to_owned(),
            (Some(Value::Bool(false)), "boolean") => " [y/N]".to_owned(),
            (None, "boolean") => " [y/n]".to_owned(),
            (Some(d), _) => format!(" [{}]", display(d)),
            (None, _) => String::new(),
        };
        loop {
            let _ = write!(out, "{head}{default}: ");
            let _ = out.flush();
            let mut line = String::new();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = writeln!(out);
                    return json!({"action": "cancel"});
                }
                Ok(_) => {}
            }
            let text = line.trim();
            match text {
                "!decline" => return json!({"action": "decline"}),
                "!cancel" => return json!({"action": "cancel"}),
                _ => {}
            }
            match interpret(text, prop, is_required) {
                Answer::Value(v) => {
                    content.insert(key.clone(), v);
                    break;
                }
                Answer::Omit => break,
                Answer::Again(why) => {
                    let _ = writeln!(out, "    {why}");
                }
            }
        }
    }
    json!({"action": "accept", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        json!({"message": "Who?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "title": "Name", "default": "Ada"},
            "confirm": {"type": "boolean", "title": "Confirm", "default": true},
            "age": {"type": "integer"},
            "color": {"type": "string", "enum": ["red", "green"]},
            "nick": {"type": "string"},
        }, "required": ["name", "age"]}})
    }

    fn answer(lines: &str) -> (Value, String) {
        let mut out = Vec::new();
        let v = ask_form(&form(), &mut lines.as_bytes(), &mut out);
        (v, String::from_utf8(out).unwrap())
    }

    #[test]
    fn defaults_types_choices_and_retries() {
        // Properties come in key order: age, color, confirm, name, nick.
        let (v, out) = answer("\nold\n42\n2\nn\n\n\n");
        assert_eq!(
            v,
            json!({"action": "accept", "content":
                {"age": 42, "color": "green", "confirm": false, "name": "Ada"}})
        );
        assert!(out.contains("a value is required"), "{out}");
        assert!(out.contains("not an integer"), "{out}");
        assert!(out.contains("1) red"), "{out}");
        assert!(out.contains("  Name (string, required) [Ada]: "), "{out}");
        assert!(out.contains("  Confirm (boolean) [Y/n]: "), "{out}");
    }

    #[test]
    fn decline_cancel_and_eof() {
        assert_eq!(answer("!decline\n").0, json!({"action": "decline"}));
        assert_eq!(answer("7\n!cancel\n").0, json!({"action": "cancel"}));
        assert_eq!(answer("7\n").0, json!({"action": "cancel"}));
    }

    #[test]
    fn roots_are_named_by_their_last_segment() {
        assert_eq!(root_name("file:///work/project/"), "project");
        assert_eq!(root_name("x"), "x");
    }
}
