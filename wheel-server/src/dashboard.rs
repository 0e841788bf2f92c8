//! The page at `/`: a dashboard over the API.

use axum::response::Html;

/// The page, compiled into the binary.
const PAGE: &str = include_str!("dashboard.html");

/// Serves the page.
pub(crate) async fn page() -> Html<&'static str> {
    Html(PAGE)
}
