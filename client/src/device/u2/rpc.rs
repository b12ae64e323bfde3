//! JSON-RPC 2.0 as uiautomator2's server speaks it (`POST /jsonrpc/0`): the request body
//! and the reading of an answer into a result or a typed [`U2Error`]. Pure.

use serde_json::{json, Value};

use super::error::U2Error;
use super::http::{snippet, Answer};

/// The body of a call. A call without arguments sends `{}`, as the Python wrapper does.
pub fn body(id: u64, method: &str, params: &Value) -> Vec<u8> {
    let params = match params {
        Value::Array(a) if a.is_empty() => json!({}),
        Value::Null => json!({}),
        p => p.clone(),
    };
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

/// The result of a call from its HTTP answer: a status other than 200, a body that is
/// not a JSON-RPC answer, or an answer for another id is [`U2Error::BadAnswer`]; an
/// error object is [`U2Error::Rpc`] (its `data`, a Java stack trace, is only searched
/// for the broken-server signatures, never kept).
pub fn result(id: u64, answer: &Answer) -> Result<Value, U2Error> {
    if answer.status != 200 {
        return Err(U2Error::BadAnswer(format!(
            "HTTP status {} from the server: {}",
            answer.status,
            snippet(&String::from_utf8_lossy(&answer.body))
        )));
    }
    let v: Value = serde_json::from_slice(&answer.body)
        .map_err(|e| U2Error::BadAnswer(format!("the answer is not JSON ({e})")))?;
    let Some(obj) = v.as_object() else {
        return Err(U2Error::BadAnswer("the answer is not a JSON object".into()));
    };
    if let Some(got) = obj.get("id") {
        if got.as_u64() != Some(id) && !got.is_null() {
            return Err(U2Error::BadAnswer(format!(
                "the answer is for call {got}, not {id}"
            )));
        }
    }
    if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let data = match err.get("data") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let broken = is_broken_server(&message) || is_broken_server(&data);
        let input_denied = message.contains("SecurityException")
            && (data.contains("INJECT_EVENTS") || message.contains("INJECT_EVENTS"))
            || data.contains("INJECT_EVENTS");
        return Err(U2Error::Rpc {
            code,
            message: snippet(&message),
            broken,
            input_denied,
        });
    }
    match obj.get("result") {
        Some(r) => Ok(r.clone()),
        None => Err(U2Error::BadAnswer(
            "a JSON-RPC answer with neither result nor error".into(),
        )),
    }
}

/// The answers after which uiautomator2 restarts its server (docs/u2-server.md).
fn is_broken_server(text: &str) -> bool {
    text.contains("UiAutomation not connected")
        || text.contains("android.os.DeadObjectException")
        || text.contains("DeadSystemRuntimeException")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> Answer {
        Answer {
            status: 200,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_body_is_a_json_rpc_2_request() {
        let b: Value = serde_json::from_slice(&body(7, "click", &json!([10, 20]))).unwrap();
        assert_eq!(
            b,
            json!({"jsonrpc": "2.0", "id": 7, "method": "click", "params": [10, 20]})
        );
        let b: Value = serde_json::from_slice(&body(8, "deviceInfo", &json!([]))).unwrap();
        assert_eq!(b["params"], json!({}));
    }

    #[test]
    fn results_and_errors_are_read() {
        assert_eq!(
            result(3, &ok(r#"{"jsonrpc":"2.0","id":3,"result":true}"#)).unwrap(),
            json!(true)
        );
        let e = result(
            3,
            &ok(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"java.lang.IllegalStateException","data":"java.lang.IllegalStateException: UiAutomation not connected!\n\tat …"}}"#),
        )
        .unwrap_err();
        assert_eq!(e.code(), "U2_RPC_ERROR");
        assert!(e.server_broken(), "{e:?}");
        assert!(!e.to_string().contains("\tat"), "no stack trace kept: {e}");
        let e = result(
            3,
            &ok(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found"}}"#),
        )
        .unwrap_err();
        assert_eq!(e.code(), "U2_RPC_ERROR");
        assert!(!e.server_broken());
        let e = result(
            3,
            &ok(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"java.lang.SecurityException","data":"Injecting to another application requires INJECT_EVENTS permission"}}"#),
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                U2Error::Rpc {
                    input_denied: true,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn bad_answers_are_typed() {
        for (status, body) in [
            (500, "{}"),
            (200, "not json"),
            (200, "[1,2]"),
            (200, r#"{"jsonrpc":"2.0","id":3}"#),
            (200, r#"{"jsonrpc":"2.0","id":4,"result":true}"#),
        ] {
            let e = result(
                3,
                &Answer {
                    status,
                    body: body.as_bytes().to_vec(),
                },
            )
            .unwrap_err();
            assert_eq!(e.code(), "U2_BAD_ANSWER", "{status} {body}: {e}");
        }
    }
}
