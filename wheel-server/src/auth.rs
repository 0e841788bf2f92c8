//! Bearer-token authentication of every `/v1` route.
//!
//! With a token configured, a request must carry `Authorization: Bearer
//! <token>`; anything else is answered 401 with a problem document and a
//! `WWW-Authenticate: Bearer` header. The comparison takes the same time
//! whatever the token sent: both sides are SHA-256 digests, 32 bytes each
//! whatever the lengths, compared in constant time (`subtle`), so response
//! times tell neither the token's bytes nor its length. Without a token
//! (allowed only on a loopback address, see `args.rs`), every request
//! passes.
//!
//! The middleware's state is the token itself, so this module depends on
//! no application state.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::Problem;

/// The token a server requires, kept as its digest: a comparison then
/// always looks at 32 bytes, so its time does not depend on how long the
/// real token is.
#[derive(Clone)]
pub(crate) struct Token {
    digest: [u8; 32],
}

impl Token {
    pub(crate) fn new(token: &str) -> Token {
        Token {
            digest: digest(token.as_bytes()),
        }
    }

    /// Whether `sent` is the token, in time independent of both.
    fn matches(&self, sent: &[u8]) -> bool {
        bool::from(digest(sent).ct_eq(&self.digest))
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Whether `headers` carry the bearer `token`.
pub(crate) fn authorized(headers: &HeaderMap, token: &Token) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return false;
    }
    let sent = value[scheme.len()..].trim_ascii();
    token.matches(sent)
}

/// The middleware: passes authorized requests on, answers 401 otherwise.
pub(crate) async fn require_token(
    State(token): State<Option<Token>>,
    request: Request,
    next: Next,
) -> Response {
    match &token {
        Some(token) if !authorized(request.headers(), token) => {
            let problem = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Missing or wrong bearer token",
                "send the server's token as `Authorization: Bearer <token>`",
            );
            let mut response = problem.into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn only_the_exact_token_passes() {
        let t = Token::new("s3cret");
        assert!(authorized(&with("Bearer s3cret"), &t));
        assert!(authorized(&with("bearer s3cret"), &t));
        assert!(!authorized(&with("Bearer s3cre"), &t));
        assert!(!authorized(&with("Bearer s3cretx"), &t));
        assert!(!authorized(&with("Basic s3cret"), &t));
        assert!(!authorized(&with("Bearer"), &t));
        assert!(!authorized(&HeaderMap::new(), &t));
        assert!(!authorized(&with("Bearer S3CRET"), &t));
        assert!(!authorized(
            &with(&format!("Bearer {}", "s".repeat(4096))),
            &t
        ));
    }
}
