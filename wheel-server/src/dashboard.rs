//! The page at `/`: a dashboard over the API, one self-contained HTML page
//! (styles and scripts inline, no external resource) compiled into the
//! binary from `dashboard.html` and the flows panel's script,
//! `dashboard_flows.js`, put inline where the page marks it.
//!
//! The page itself holds no data, so it is served without a token; it
//! asks the user for the token and sends it on its `/v1` calls, and reads
//! the counters from the open `/metrics`. Everything it shows from the API
//! is set as text, never parsed as HTML. As a second line against script
//! injection, the page is served with a Content-Security-Policy that lets
//! only its own inline `<script>` and `<style>` run (each carrying a nonce
//! fresh for every response) and lets it connect only to this server; no
//! inline event handler, no other script, no image from elsewhere. It may
//! not be framed, so its retry buttons cannot be clicked from another site.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

/// The page, compiled into the binary; `__NONCE__` marks its nonces.
const PAGE: &str = include_str!("dashboard.html");

/// The flows panel's script, a file of its own, put into [`PAGE`] where
/// [`FLOWS_MARK`] stands (inside a `<script>` element of its own, with
/// the nonce).
const FLOWS_SCRIPT: &str = include_str!("dashboard_flows.js");

const FLOWS_MARK: &str = "__FLOWS_SCRIPT__";

/// The whole page, its scripts in place, built once.
static WHOLE: LazyLock<String> = LazyLock::new(|| PAGE.replace(FLOWS_MARK, FLOWS_SCRIPT));

/// The placeholder in [`PAGE`] replaced by each response's nonce.
const NONCE_MARK: &str = "__NONCE__";

/// A fresh nonce: 128 random bits in hex. Without randomness the page is
/// still served, with a fixed nonce: the policy then only loses its
/// unpredictability, and the page escapes what it shows either way.
fn nonce() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return "0".repeat(32);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The Content-Security-Policy for a page carrying `nonce`.
fn policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

/// Serves the page.
pub(crate) async fn page() -> Response {
    let nonce = nonce();
    (
        [
            (header::CONTENT_SECURITY_POLICY, policy(&nonce)),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::REFERRER_POLICY, "no-referrer".to_owned()),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        Html(WHOLE.replace(NONCE_MARK, &nonce)),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_response_has_its_own_nonce_in_page_and_policy() {
        let a = page().await;
        let b = page().await;
        let csp = |r: &Response| {
            r.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .to_owned()
        };
        let (csp_a, csp_b) = (csp(&a), csp(&b));
        assert_ne!(csp_a, csp_b);
        let nonce = csp_a
            .split("'nonce-")
            .nth(1)
            .and_then(|s| s.split('\'').next())
            .unwrap()
            .to_owned();
        assert_eq!(nonce.len(), 32);
        let body = axum::body::to_bytes(a.into_body(), 1 << 20).await.unwrap();
        let body = std::str::from_utf8(&body).unwrap();
        assert!(!body.contains(NONCE_MARK));
        // The style and the two scripts.
        assert_eq!(body.matches(&format!("nonce=\"{nonce}\"")).count(), 3);
        assert!(csp_a.contains("frame-ancestors 'none'"));
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        let page: &str = &WHOLE;
        for needle in ["http://", "https://", "src=", "innerHTML", "onclick"] {
            let found = page
                .match_indices(needle)
                .map(|(i, _)| &page[i.saturating_sub(30)..(i + 40).min(page.len())])
                .filter(|around| !around.contains("www.w3.org/2000/svg"))
                .collect::<Vec<_>>();
            assert!(found.is_empty(), "{needle} in the page: {found:?}");
        }
    }

    #[test]
    fn the_flows_script_stays_inside_its_element() {
        assert_eq!(PAGE.matches(FLOWS_MARK).count(), 1);
        assert!(!WHOLE.contains(FLOWS_MARK));
        for needle in ["</script", "<!--", NONCE_MARK] {
            assert!(!FLOWS_SCRIPT.contains(needle), "{needle}");
        }
    }
}
