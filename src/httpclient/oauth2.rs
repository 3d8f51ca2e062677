//! `oauth2 { ... }` with the `client_credentials` grant (RFC 6749 §4.4), as Go's
//! `golang.org/x/oauth2/clientcredentials` does it: client id and secret in a Basic header,
//! `scope` space-separated, `endpoint_params` added to the form, the token cached until 10 s
//! before it expires. The secret file is re-read whenever a new token is fetched.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;

use super::client::{HttpClientError, read_secret, transport};
use super::{GRANT_CLIENT_CREDENTIALS, OAuth2Config};

/// Tokens are refreshed this long before they expire (Go's `expiryDelta`).
const EXPIRY_DELTA: Duration = Duration::from_secs(10);

pub(super) struct TokenSource {
    client: reqwest::Client,
    cfg: OAuth2Config,
    cached: tokio::sync::Mutex<Option<Token>>,
}

struct Token {
    header: HeaderValue,
    expires: Option<Instant>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: String,
    #[serde(default)]
    expires_in: Option<f64>,
}

impl TokenSource {
    pub(super) fn new(cfg: &OAuth2Config, user_agent: &str) -> Result<Self, HttpClientError> {
        if cfg.grant_type != GRANT_CLIENT_CREDENTIALS {
            return Err(HttpClientError::OAuth2(format!(
                "grant_type {:?} is not supported yet (only {GRANT_CLIENT_CREDENTIALS:?})",
                cfg.grant_type
            )));
        }
        let builder = reqwest::Client::builder()
            .user_agent(user_agent)
            .timeout(Duration::from_secs(30));
        let tls = super::tls::client_config(&cfg.tls_config.clone().unwrap_or_default(), true)?;
        let client = transport(builder, tls, &cfg.proxy(), true, true)?
            .build()
            .map_err(|e| HttpClientError::Build(e.to_string()))?;
        Ok(TokenSource {
            client,
            cfg: cfg.clone(),
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// `Authorization` for the next request: the cached token, or a fresh one.
    pub(super) async fn header(&self) -> Result<HeaderValue, HttpClientError> {
        let mut cached = self.cached.lock().await;
        if let Some(t) = cached.as_ref()
            && t.expires.is_none_or(|e| Instant::now() + EXPIRY_DELTA < e)
        {
            return Ok(t.header.clone());
        }
        let token = self.fetch().await?;
        let header = token.header.clone();
        *cached = Some(token);
        Ok(header)
    }

    async fn fetch(&self) -> Result<Token, HttpClientError> {
        let secret = read_secret(
            &self.cfg.client_secret,
            &self.cfg.client_secret_file,
            "oauth2 client secret",
        )
        .await?;
        let mut form: BTreeMap<&str, String> = BTreeMap::new();
        for (k, v) in &self.cfg.endpoint_params {
            form.insert(k, v.clone());
        }
        form.insert("grant_type", GRANT_CLIENT_CREDENTIALS.to_string());
        if !self.cfg.scopes.is_empty() {
            form.insert("scope", self.cfg.scopes.join(" "));
        }
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
            .collect::<Vec<_>>()
            .join("&");
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            query_escape(&self.cfg.client_id),
            query_escape(&secret)
        ));
        let started = Instant::now();
        let resp = self
            .client
            .post(&self.cfg.token_url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(AUTHORIZATION, format!("Basic {basic}"))
            .body(body)
            .send()
            .await
            .map_err(|e| HttpClientError::OAuth2(format!("requesting token: {e}")))?;
        let status = resp.status();
        // A token answer is a small JSON object.
        let bytes = super::body::read_limited(resp, 1 << 20)
            .await
            .map_err(|e| HttpClientError::OAuth2(format!("reading token response: {e}")))?;
        if !status.is_success() {
            return Err(HttpClientError::OAuth2(format!(
                "cannot fetch token: {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(512)])
            )));
        }
        let parsed: TokenResponse = serde_json::from_slice(&bytes)
            .map_err(|e| HttpClientError::OAuth2(format!("parsing token response: {e}")))?;
        if parsed.access_token.is_empty() {
            return Err(HttpClientError::OAuth2(
                "server response missing access_token".into(),
            ));
        }
        let scheme = match parsed.token_type.to_ascii_lowercase().as_str() {
            "" | "bearer" => "Bearer".to_string(),
            "mac" => "MAC".to_string(),
            "basic" => "Basic".to_string(),
            _ => parsed.token_type.clone(),
        };
        let mut header = HeaderValue::from_str(&format!("{scheme} {}", parsed.access_token))
            .map_err(|e| HttpClientError::OAuth2(format!("token is not a header value: {e}")))?;
        header.set_sensitive(true);
        let expires = parsed
            .expires_in
            .filter(|s| *s > 0.0 && s.is_finite())
            .map(|s| started + Duration::from_secs_f64(s));
        Ok(Token { header, expires })
    }
}

use crate::gocompat::query_escape;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_go() {
        assert_eq!(query_escape("a b&c=d/é~"), "a+b%26c%3Dd%2F%C3%A9~");
    }
}
