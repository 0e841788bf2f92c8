//! Flow keys: the name that groups timers for flow control, and how a
//! node finds each timer's.
//!
//! A callback timer's flow key is the one its [`HttpCallback`] names, else
//! its URL's origin (`https://api.example.com`, with the port when it is
//! not the scheme's default); an origin that is not a valid flow key (over
//! 512 bytes) counts as none. A plain timer has one only when the builder
//! was given a rule ([`DurableTimersBuilder::flow_key`]); an answer of the
//! rule that is not a valid flow key ([`check_flow_key`]) counts as none,
//! so a rule can never make a timer unstartable. A timer without a flow
//! key is held back only by a pause of the whole namespace.
//!
//! The node derives the key at each start from the claim's key and payload
//! (`node/starter.rs`), so nothing of it is stored with the timer: a rule
//! changed between two deploys applies to every timer started after.
//!
//! [`HttpCallback`]: crate::http::HttpCallback
//! [`DurableTimersBuilder::flow_key`]: crate::DurableTimersBuilder::flow_key
//!
//! Node state: none: the rule is set when the node is built, read-only
//! after.

use std::sync::Arc;

use crate::DurableError;
use crate::store::Claimed;
use crate::store::flow_state::MAX_FLOW_KEY;

/// The builder's rule for plain timers: key and payload to a flow key.
pub(crate) type FlowOf = Arc<dyn Fn(&str, &[u8]) -> Option<String> + Send + Sync>;

/// How a node finds flow keys.
#[derive(Clone, Default)]
pub(crate) struct FlowKeys {
    /// The rule for plain timers, if the builder was given one.
    plain: Option<FlowOf>,
}

impl FlowKeys {
    pub(crate) fn new(plain: Option<FlowOf>) -> FlowKeys {
        FlowKeys { plain }
    }

    /// The flow key of the timer `key` with this payload, if it has one.
    pub(crate) fn key_of(&self, key: &str, payload: &[u8]) -> Option<String> {
        // An origin can be longer than a flow key may be (a host of a
        // thousand characters parses): such a callback has none.
        #[cfg(feature = "http")]
        if crate::http::is_callback_payload(payload) {
            return crate::http::flow_key_of(payload).filter(|k| check_flow_key(k).is_ok());
        }
        let rule = self.plain.as_ref()?;
        rule(key, payload).filter(|k| check_flow_key(k).is_ok())
    }

    /// The flow key of each claim, in order.
    pub(crate) fn keys_of(&self, claims: &[Claimed]) -> Vec<Option<String>> {
        claims
            .iter()
            .map(|c| self.key_of(&c.key, &c.payload))
            .collect()
    }
}

/// Checks a flow key given by a caller: 1 to 512 bytes, no control
/// character.
///
/// # Errors
///
/// [`DurableError::InvalidFlow`] saying which rule it breaks.
pub(crate) fn check_flow_key(key: &str) -> Result<(), DurableError> {
    if key.is_empty() {
        return Err(DurableError::InvalidFlow("it is empty".into()));
    }
    if key.len() > MAX_FLOW_KEY {
        return Err(DurableError::InvalidFlow(format!(
            "it is {} bytes long, over the limit of {MAX_FLOW_KEY}",
            key.len()
        )));
    }
    if key.chars().any(char::is_control) {
        return Err(DurableError::InvalidFlow(
            "it holds a control character".into(),
        ));
    }
    Ok(())
}

/// Checks a deferral's flow keys (`Store::defer`): one per claim, each
/// valid. Every store checks them before it changes anything, so a bad
/// key fails the whole call.
///
/// # Errors
///
/// [`DurableError::InvalidFlow`] for a count that is not the claims' or
/// a bad key.
pub(crate) fn check_deferral<K: AsRef<str>>(
    claims: usize,
    flows: &[K],
) -> Result<(), DurableError> {
    if flows.len() != claims {
        return Err(DurableError::InvalidFlow(format!(
            "{} flow keys for {claims} claims: one per claim",
            flows.len()
        )));
    }
    flows.iter().try_for_each(|f| check_flow_key(f.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_keys_are_one_to_512_bytes_without_control_characters() {
        assert!(check_flow_key("https://api.example.com").is_ok());
        assert!(check_flow_key(&"é".repeat(256)).is_ok(), "512 bytes");
        for bad in ["", "a\nb", "\u{7f}", &"x".repeat(513)] {
            let e = check_flow_key(bad).unwrap_err();
            assert!(matches!(e, DurableError::InvalidFlow(_)), "{bad:?}: {e}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_callback_whose_origin_is_too_long_has_no_flow_key() {
        use crate::http::{HttpCallback, Method};
        let keys = FlowKeys::default();
        let short = HttpCallback::new(Method::Get, "http://a.example/x");
        let payload = short.to_payload().unwrap();
        assert_eq!(
            keys.key_of("k", &payload).as_deref(),
            Some("http://a.example")
        );
        let host = format!("{}.example", "a".repeat(600));
        let long = HttpCallback::new(Method::Get, format!("http://{host}/x"));
        let payload = long.to_payload().unwrap();
        assert_eq!(keys.key_of("k", &payload), None);
    }

    #[test]
    fn a_rule_s_invalid_answer_counts_as_no_flow_key() {
        let keys = FlowKeys::new(Some(Arc::new(|key: &str, _: &[u8]| {
            key.split_once(':').map(|(k, _)| k.to_owned())
        })));
        assert_eq!(
            keys.key_of("tenant7:order:1", b"x").as_deref(),
            Some("tenant7")
        );
        assert_eq!(keys.key_of("no-colon", b"x"), None);
        assert_eq!(keys.key_of(":empty", b"x"), None, "an empty key is none");
        assert_eq!(FlowKeys::default().key_of("tenant7:order:1", b"x"), None);
    }
}
