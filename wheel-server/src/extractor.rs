//! The request extractors of the `/v1` routes: a JSON body ([`JsonBody`]),
//! a timer's key in the path ([`Key`]) and a schedule's id ([`Id`]), each refusing with the
//! problem document this API promises instead of axum's plain-text
//! rejection. They depend on no state: any router may use them.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::decode::Object;
use crate::error::{Problem, serde_field};

/// A JSON body, read with the problems this API promises: 415 without a
/// JSON content type, 413 over the limit, 400 for malformed JSON, 422 for
/// well-formed JSON of the wrong shape, each naming the field at fault.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let json_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .is_some_and(|v| v == "application/json" || v.ends_with("+json"));
        if !json_type {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "The body must be JSON",
                "send the body with `Content-Type: application/json`",
            ));
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e: BytesRejection| Problem::body(&e))?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// The `{key}` of a route's path, decoded; a path that does not decode is
/// a 400 naming `key`.
pub(crate) struct Key(pub(crate) String);

impl<S: Send + Sync> FromRequestParts<S> for Key {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let Path(key) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| Problem::path(&e))?;
        Ok(Key(key))
    }
}

/// The `{id}` of a schedule route's path, decoded; a path that does not
/// decode is a 400 naming `id`.
pub(crate) struct Id(pub(crate) String);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| Problem::bad_parameter("id", e.body_text()))?;
        Ok(Id(id))
    }
}

/// Reads `bytes` as a `T` from a JSON object (an array is refused, see
/// [`object`](crate::decode::object)), naming the JSON path of the first
/// error: `.` for the body as a whole.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let err = match serde_path_to_error::deserialize::<_, Object<T>>(&mut de) {
        Ok(v) => return de.end().map(|()| v.0).map_err(|e| malformed(&e)),
        Err(err) => err,
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    if inner.is_syntax() || inner.is_eof() || inner.is_io() {
        return Err(malformed(&inner));
    }
    let message = inner.to_string();
    // A missing or repeated field is reported at its parent: name the
    // field itself.
    let field = match serde_field(&message) {
        Some(name) if path == "." => name.to_owned(),
        Some(name) => format!("{path}.{name}"),
        None => path,
    };
    let detail = if message.contains("untagged enum Delay") {
        "a delay is an integer of milliseconds or a string like \"90s\", \"15m\", \"2h\" or \"7d\""
            .to_owned()
    } else {
        message
    };
    Err(Problem::invalid(field, detail))
}

fn malformed(e: &serde_json::Error) -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "malformed-json",
        "The body is not valid JSON",
        e.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::NewTimer;

    fn field_of(body: &str) -> (u16, Option<String>) {
        let p = parse_json::<NewTimer>(body.as_bytes()).unwrap_err();
        (p.status, p.field)
    }

    #[test]
    fn shape_errors_name_their_json_path() {
        assert_eq!(field_of("{\"delay\": 5}"), (422, Some("callback".into())));
        assert_eq!(
            field_of("{\"delay\": 5, \"callback\": {\"url\": 7}}"),
            (422, Some("callback.url".into()))
        );
        assert_eq!(
            field_of("{\"delay\": -5, \"callback\": {\"url\": \"http://a.example/\"}}"),
            (422, Some("delay".into()))
        );
        assert_eq!(field_of("{\"delay\": 5,"), (400, None));
        let trailing = "{\"delay\": 5, \"callback\": {\"url\": \"http://a.example/\"}} {}";
        assert_eq!(field_of(trailing), (400, None));
    }
}
