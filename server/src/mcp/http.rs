//! Streamable HTTP for MCP over the reqwest client stepwise already has (rustls, compiled-in roots): the
//! SDK's own client needs another major version of reqwest. The SDK's worker does the protocol (session
//! ids, SSE resumption); this only sends and receives.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{BoxStream, StreamExt};
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

const SESSION_ID: &str = "Mcp-Session-Id";
const LAST_EVENT_ID: &str = "Last-Event-ID";
const ACCEPT: &str = "application/json, text/event-stream";
/// A JSON answer larger than this is refused rather than buffered.
const MAX_JSON: usize = 16 * 1024 * 1024;

#[derive(Clone)]
pub struct Client(reqwest::Client);

impl Client {
    pub fn new(connect_timeout: Duration) -> Result<Client, String> {
        reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            // Redirects would replay the session id and the configured headers elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(Client)
            .map_err(|e| format!("cannot make an HTTP client: {e}"))
    }
}

type Error = StreamableHttpError<reqwest::Error>;

fn client_err(e: reqwest::Error) -> Error {
    StreamableHttpError::Client(e)
}

fn request(
    b: reqwest::RequestBuilder,
    session: Option<&str>,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    let mut b = b.header(reqwest::header::ACCEPT, ACCEPT);
    if let Some(s) = session {
        b = b.header(SESSION_ID, s);
    }
    if let Some(token) = auth {
        b = b.bearer_auth(token);
    }
    for (k, v) in headers {
        b = b.header(k, v);
    }
    b
}

fn content_type(r: &reqwest::Response) -> String {
    r.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase()
}

fn sse(r: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(r.bytes_stream()).boxed()
}

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let b = request(self.0.post(&*uri), session_id.as_deref(), auth_header, custom_headers);
        let r = b.json(&message).send().await.map_err(client_err)?;
        let status = r.status();
        if status == reqwest::StatusCode::ACCEPTED || status == reqwest::StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = r.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
        let ct = content_type(&r);
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        if !status.is_success() {
            let body = r.text().await.unwrap_or_default();
            // A JSON-RPC error in the body is the server's answer; anything else is the HTTP failure.
            if let Ok(m @ ServerJsonRpcMessage::Error(_)) = serde_json::from_str::<ServerJsonRpcMessage>(&body) {
                return Ok(StreamableHttpPostResponse::Json(m, new_session));
            }
            let body = crate::host::output::truncate_chars(&body, 300).to_string();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP {status}: {body}"))));
        }
        if ct.starts_with("text/event-stream") {
            return Ok(StreamableHttpPostResponse::Sse(sse(r), new_session));
        }
        if ct.starts_with("application/json") {
            if r.content_length().is_some_and(|n| n as usize > MAX_JSON) {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: MAX_JSON });
            }
            let body = r.bytes().await.map_err(client_err)?;
            if body.len() > MAX_JSON {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: MAX_JSON });
            }
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(m) => Ok(StreamableHttpPostResponse::Json(m, new_session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::Deserialize(e)),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(Some(ct)))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let b = request(self.0.delete(&*uri), Some(&session_id), auth_header, custom_headers);
        let r = b.send().await.map_err(client_err)?;
        if r.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        r.error_for_status().map(|_| ()).map_err(client_err)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut b = request(self.0.get(&*uri), session_id.as_deref(), auth_header, custom_headers);
        if let Some(id) = last_event_id {
            b = b.header(LAST_EVENT_ID, id);
        }
        let r = b.send().await.map_err(client_err)?;
        if r.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let r = r.error_for_status().map_err(client_err)?;
        let ct = content_type(&r);
        if !ct.starts_with("text/event-stream") {
            return Err(StreamableHttpError::UnexpectedContentType(Some(ct)));
        }
        Ok(sse(r))
    }
}
