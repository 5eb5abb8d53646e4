//! What can go wrong talking to a model, and how transport errors are put into words. Both the request
//! code (http.rs) and the stream reader (sse.rs) use these, so neither imports the other.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmError {
    /// The provider answered with an error status (after retries, where retrying made sense).
    /// `retry_after`: how long the provider asked us to wait (its `retry-after` header).
    Status { provider: &'static str, status: u16, message: String, retry_after: Option<Duration> },
    /// No answer: connection refused, timeout, a stream cut off.
    Transport { provider: &'static str, message: String },
    /// The answer broke off after it had started: a cut connection, or an `error` event in the stream.
    /// `retryable` when trying again may well work (overload, rate limit, a dropped connection).
    Interrupted { provider: &'static str, status: Option<u16>, message: String, retryable: bool },
    /// The answer was not what the wire format promises.
    Protocol { provider: &'static str, message: String },
    /// Recorded session ran out, or similar local failure.
    Other(String),
}

impl LlmError {
    /// The provider said the prompt does not fit the model's context window (Anthropic: "prompt is too
    /// long"; OpenAI: `context_length_exceeded`, "maximum context length"; llama.cpp: "exceeds the
    /// available context size").
    pub fn is_context_overflow(&self) -> bool {
        let LlmError::Status { status: 400 | 413, message, .. } = self else { return false };
        let m = message.to_ascii_lowercase();
        [
            "prompt is too long",
            "context_length_exceeded",
            "maximum context length",
            "exceeds the available context size",
        ]
        .iter()
        .any(|p| m.contains(p))
    }

    /// The provider refused images: an error status whose message names them (a model without vision,
    /// OpenAI's "image_url is only supported by certain models", llama.cpp's "image input is not
    /// supported", an image past Anthropic's limits). Meaningful only for a request that carried images;
    /// the loop asks only then.
    pub fn refuses_images(&self) -> bool {
        let LlmError::Status { status, message, .. } = self else { return false };
        (400..600).contains(status)
            && !matches!(status, 429 | 503 | 529)
            && !self.is_context_overflow()
            && message.to_ascii_lowercase().contains("image")
    }
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LlmError::Status { provider, status, message, .. } => {
                write!(f, "{provider} API error: HTTP {status}: {message}")
            }
            LlmError::Transport { provider, message } => write!(f, "{provider} API unreachable: {message}"),
            LlmError::Interrupted { provider, status: Some(status), message, .. } => {
                write!(f, "{provider} API error during the answer: HTTP {status}: {message}")
            }
            LlmError::Interrupted { provider, status: None, message, .. } => {
                write!(f, "{provider} API answer broke off: {message}")
            }
            LlmError::Protocol { provider, message } => {
                write!(f, "{provider} API sent an unexpected response: {message}")
            }
            LlmError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LlmError {}

pub(crate) fn silent(provider: &'static str, silence: Duration) -> LlmError {
    LlmError::Interrupted {
        provider,
        status: None,
        message: format!("the model sent nothing for {}s (STEPWISE_MODEL_TIMEOUT)", silence.as_secs()),
        retryable: true,
    }
}

/// A reqwest error with its whole chain of causes.
pub fn describe(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}
