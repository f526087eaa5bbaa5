//! Answering the server's requests: elicitation forms prompted on the terminal, sampling from
//! `--sampling-reply`, roots from `--root`.
//!
//! Elicitation: mcpc declares form mode only, so a request in any other mode (`url`) is
//! refused with JSON-RPC error -32602 (Invalid params), as the 2025-11-25 specification asks
//! of a client that receives a mode it did not declare. A form request is never accepted
//! without the user: when stdin is not a terminal it is declined (with a note on stderr);
//! at a terminal the server (its `--stdio` command) and its message are shown, then each flat
//! property of `requestedSchema` in turn, with its title, description and type; the default,
//! if any, is shown in brackets and pressing Enter accepts it. Booleans take y/n (yes, no,
//! true, false); enums list their choices, answered by number or by value; numbers and
//! integers are checked and asked again when invalid. An empty answer to a field without a
//! default leaves an optional field out and asks a required field again. `!decline` declines
//! and `!cancel` cancels the whole form (end of input cancels too). Then the answer is shown
//! and sent only on an explicit `a` (accept); `e` edits it, `d` declines, `c` cancels. A form
//! without fields is asked the same way. All server text is cleaned before it is shown.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use mcp_runtime::{
    CreateMessageResult, ElicitParams, ElicitResult, Handlers, Root, Roots, RpcError, codes,
};
use serde_json::{Map, Value, json};

use crate::sanitize::clean;

/// Refuses an elicitation request whose mode mcpc did not declare (it declares form only;
/// a request without `mode` is a form request).
pub fn check_mode(params: &Value) -> Result<(), RpcError> {
    match params.get("mode") {
        None => Ok(()),
        Some(Value::String(mode)) if mode == "form" => Ok(()),
        Some(mode) => Err(RpcError {
            code: codes::INVALID_PARAMS,
            message: format!(
                "elicitation mode {mode} was not declared by this client (mcpc declares form mode only)"
            ),
            data: None,
        }),
    }
}

/// The handler the CLI's client answers the server with; `server` names the server in the
/// elicitation prompt (its `--stdio` command).
pub fn handlers(sampling_reply: Option<String>, roots: &[String], server: &str) -> Handlers {
    let server = server.to_owned();
    let mut h = Handlers::new()
        .elicitation(move |params: ElicitParams, _cx| {
            let server = server.clone();
            async move {
                // The form code reads the request as the server sent it (extra fields kept).
                let params = match &params {
                    ElicitParams::Form(form) => serde_json::to_value(form),
                    ElicitParams::Url(url) => serde_json::to_value(url),
                    _ => Ok(json!({"mode": "unknown"})),
                }
                .unwrap_or_default();
                check_mode(&params)?;
                if !std::io::stdin().is_terminal() {
                    errln!(
                        "mcpc: declined the elicitation request of `{server}` ({}): stdin is not a terminal",
                        params.get("message").and_then(Value::as_str).unwrap_or("")
                    );
                    return Ok(ElicitResult::decline());
                }
                let answer = tokio::task::spawn_blocking(move || {
                    let stdin = std::io::stdin();
                    let mut input = stdin.lock();
                    ask_form(&server, &params, &mut input, &mut std::io::stderr())
                })
                .await
                .map_err(|e| RpcError {
                    code: codes::INTERNAL_ERROR,
                    message: format!("elicitation prompt failed: {e}"),
                    data: None,
                })?;
                serde_json::from_value(answer).map_err(|e| RpcError {
                    code: codes::INTERNAL_ERROR,
                    message: format!("elicitation answer malformed: {e}"),
                    data: None,
                })
            }
        })
        .sampling(move |_params, _cx| {
            let reply = sampling_reply.clone();
            async move {
                match reply {
                    Some(text) => Ok(CreateMessageResult::text("mcpc --sampling-reply", text)),
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
        h = h.roots(Roots::new(
            roots.iter().map(|uri| Root::new(uri).named(root_name(uri))),
        ));
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

fn interpret(text: &str, prop: &Value, default: Option<&Value>, required: bool) -> Answer {
    let kind = prop.get("type").and_then(Value::as_str).unwrap_or("string");
    let options = choices(prop);
    if text.is_empty() {
        return match default {
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

/// Writes `text`, cleaned (see [`crate::sanitize::clean`]): the form shows server text.
fn say(out: &mut impl Write, text: &str) {
    let _ = out.write_all(clean(text).as_bytes());
    let _ = out.flush();
}

/// The answer of a refused form.
fn refuse(action: &str) -> Value {
    json!({"action": action})
}

/// Asks each field of the form in turn; `Err` carries a decline or cancel answer.
fn ask_fields(
    props: &Map<String, Value>,
    required: &[&str],
    previous: &Map<String, Value>,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Map<String, Value>, Value> {
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
            say(out, &format!("    {}) {label}\n", i + 1));
        }
        let default_value = previous.get(key).or_else(|| prop.get("default"));
        let default = match (default_value, kind) {
            (Some(Value::Bool(true)), "boolean") => " [Y/n]".to_owned(),
            (Some(Value::Bool(false)), "boolean") => " [y/N]".to_owned(),
            (None, "boolean") => " [y/n]".to_owned(),
            (Some(d), _) => format!(" [{}]", display(d)),
            (None, _) => String::new(),
        };
        loop {
            say(out, &format!("{head}{default}: "));
            let Some(line) = read_answer(input, out) else {
                return Err(refuse("cancel"));
            };
            match line.as_str() {
                "!decline" => return Err(refuse("decline")),
                "!cancel" => return Err(refuse("cancel")),
                _ => {}
            }
            match interpret(&line, prop, default_value, is_required) {
                Answer::Value(v) => {
                    content.insert(key.clone(), v);
                    break;
                }
                Answer::Omit => break,
                Answer::Again(why) => say(out, &format!("    {why}\n")),
            }
        }
    }
    Ok(content)
}

/// One trimmed line of input; `None` at end of input (or a read error).
fn read_answer(input: &mut impl BufRead, out: &mut impl Write) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => {
            say(out, "\n");
            None
        }
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Asks the form of an `elicitation/create` request from `server` on `out`, reading answers
/// from `input`; returns the `ElicitResult`. Nothing is accepted without the user: after the
/// fields (also when there are none) the answer is shown and must be sent explicitly with
/// `a` (accept); `e` asks the fields again, `d` declines, `c` or end of input cancels.
pub fn ask_form(
    server: &str,
    params: &Value,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Value {
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
    say(out, &format!("\nThe server `{server}` asks: {message}\n"));
    if props.is_empty() {
        say(out, "  (no fields to fill in)\n");
    } else {
        say(
            out,
            "  (Enter accepts the [default]; type !decline or !cancel to refuse the whole form)\n",
        );
    }
    let mut content = Map::new();
    loop {
        if !props.is_empty() {
            content = match ask_fields(props, &required, &content, input, out) {
                Ok(content) => content,
                Err(refused) => return refused,
            };
        }
        say(
            out,
            &format!(
                "  Your answer: {}\n",
                if content.is_empty() {
                    "(nothing)".to_owned()
                } else {
                    Value::Object(content.clone()).to_string()
                }
            ),
        );
        let choices = if props.is_empty() {
            "[a]ccept, [d]ecline or [c]ancel"
        } else {
            "[a]ccept, [e]dit, [d]ecline or [c]ancel"
        };
        loop {
            say(out, &format!("  Send it to the server? {choices}: "));
            let Some(line) = read_answer(input, out) else {
                return refuse("cancel");
            };
            match line.to_ascii_lowercase().as_str() {
                "a" | "accept" => return json!({"action": "accept", "content": content}),
                "d" | "decline" | "!decline" => return refuse("decline"),
                "c" | "cancel" | "!cancel" => return refuse("cancel"),
                "e" | "edit" if !props.is_empty() => break,
                _ => say(out, &format!("    answer {choices}\n")),
            }
        }
    }
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

    fn answer_to(params: &Value, lines: &str) -> (Value, String) {
        let mut out = Vec::new();
        let v = ask_form("srv", params, &mut lines.as_bytes(), &mut out);
        (v, String::from_utf8(out).unwrap())
    }

    fn answer(lines: &str) -> (Value, String) {
        answer_to(&form(), lines)
    }

    #[test]
    fn defaults_types_choices_and_retries() {
        // Properties come in key order: age, color, confirm, name, nick; then the review.
        let (v, out) = answer("\nold\n42\n2\nn\n\n\n\na\n");
        assert_eq!(
            v,
            json!({"action": "accept", "content":
                {"age": 42, "color": "green", "confirm": false, "name": "Ada"}})
        );
        assert!(out.contains("The server `srv` asks: Who?"), "{out}");
        assert!(out.contains("a value is required"), "{out}");
        assert!(out.contains("not an integer"), "{out}");
        assert!(out.contains("1) red"), "{out}");
        assert!(out.contains("  Name (string, required) [Ada]: "), "{out}");
        assert!(out.contains("  Confirm (boolean) [Y/n]: "), "{out}");
        assert!(out.contains("answer [a]ccept, [e]dit"), "{out}");
    }

    #[test]
    fn nothing_is_sent_without_an_explicit_accept() {
        // The fields answered, then end of input at the review: cancelled, not accepted.
        assert_eq!(answer("42\n\n\n\n\n").0, json!({"action": "cancel"}));
        assert_eq!(answer("42\n\n\n\n\nd\n").0, json!({"action": "decline"}));
        // Edit: the fields again, the previous answers as defaults.
        let (v, out) = answer("42\n\n\n\n\ne\n43\n\n\n\n\naccept\n");
        assert_eq!(
            v,
            json!({"action": "accept", "content": {"age": 43, "confirm": true, "name": "Ada"}})
        );
        assert!(out.contains("(integer, required) [42]: "), "{out}");
    }

    #[test]
    fn a_form_without_fields_still_asks() {
        for params in [
            json!({"message": "Proceed?", "requestedSchema": {"type": "object", "properties": {}}}),
            json!({"message": "Proceed?", "requestedSchema": {"type": "object"}}),
            json!({"message": "Proceed?"}),
        ] {
            let (v, out) = answer_to(&params, "");
            assert_eq!(v, json!({"action": "cancel"}), "{params}");
            assert!(out.contains("(no fields to fill in)"), "{out}");
            assert_eq!(
                answer_to(&params, "\n\nd\n").0,
                json!({"action": "decline"})
            );
            assert_eq!(
                answer_to(&params, "x\na\n").0,
                json!({"action": "accept", "content": {}})
            );
        }
    }

    #[test]
    fn decline_cancel_and_eof() {
        assert_eq!(answer("!decline\n").0, json!({"action": "decline"}));
        assert_eq!(answer("7\n!cancel\n").0, json!({"action": "cancel"}));
        assert_eq!(answer("7\n").0, json!({"action": "cancel"}));
    }

    #[test]
    fn undeclared_modes_are_invalid_params() {
        assert!(check_mode(&json!({"message": "m"})).is_ok());
        assert!(check_mode(&json!({"mode": "form"})).is_ok());
        for mode in [json!("url"), json!("other"), json!(1)] {
            let e = check_mode(&json!({"mode": mode, "url": "https://x"})).unwrap_err();
            assert_eq!(e.code, -32602);
        }
    }

    #[test]
    fn server_text_is_cleaned() {
        let params = json!({"message": "hi\x1b]0;pwned\x07", "requestedSchema": {
            "type": "object", "properties": {"x": {"type": "string",
            "title": "X\x1b[2J", "description": "d\r\u{202e}", "default": "\x1b[31m"}}}});
        let (_, out) = answer_to(&params, "\nc\n");
        assert!(!out.contains('\x1b') && !out.contains('\r') && !out.contains('\u{202e}'));
        assert!(out.contains("hi\\x1b]0;pwned\\x07"), "{out}");
    }

    #[test]
    fn roots_are_named_by_their_last_segment() {
        assert_eq!(root_name("file:///work/project/"), "project");
        assert_eq!(root_name("x"), "x");
    }
}
