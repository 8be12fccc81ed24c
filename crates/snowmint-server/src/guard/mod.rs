//! What a request passes before a route answers it.

pub(crate) mod check;
pub(crate) mod edge;
pub(crate) mod origin;
pub(crate) mod token;

#[cfg(test)]
pub(crate) mod testing {
    use axum::http::{HeaderMap, HeaderName, HeaderValue};
    use proptest::prelude::*;

    /// Header maps of `names`, each present any number of times (missing,
    /// once, repeated) among the others, with short values: what a pass
    /// over a request's headers is compared with lookups on.
    pub(crate) fn header_maps(names: Vec<HeaderName>) -> impl Strategy<Value = HeaderMap> {
        prop::collection::vec((0..names.len(), "[0-9a-z]{0,4}"), 0..12).prop_map(move |pairs| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.append(names[name].clone(), HeaderValue::from_str(&value).unwrap());
            }
            headers
        })
    }
}
