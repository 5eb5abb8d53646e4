//! When a failed model request is sent again, and after how long: one policy for every way a request
//! fails (an error status, no connection, an answer that broke off before any of it was shown).

use std::time::Duration;

use super::LlmError;

/// Longest `retry-after` we honour; a provider asking for more gets a clear error instead of a hang.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Retries after the first attempt.
    pub max: u32,
    /// First backoff delay; doubles per retry.
    pub base: Duration,
}

impl Retry {
    /// How long to wait before attempt `attempt + 1`, or `None` to give up with `err`. `shown`: some of
    /// the answer already reached the user, so sending again would show it twice.
    pub fn wait(&self, attempt: u32, err: &LlmError, shown: bool) -> Option<Duration> {
        if attempt >= self.max {
            return None;
        }
        let backoff = self.base.saturating_mul(1 << attempt.min(10));
        match err {
            // A server that cannot take images (llama.cpp without its projector answers 500) will not
            // take them on a second try either.
            _ if err.refuses_images() => None,
            LlmError::Status { status, retry_after, .. } if retryable(*status) => match retry_after {
                Some(d) if *d > MAX_RETRY_AFTER => None,
                Some(d) => Some(*d),
                None => Some(backoff),
            },
            LlmError::Transport { .. } => Some(backoff),
            LlmError::Interrupted { retryable: true, .. } if !shown => Some(backoff),
            _ => None,
        }
    }
}

/// Rate limits, overload and server errors.
pub fn retryable(status: u16) -> bool {
    status == 429 || status == 529 || (500..600).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, retry_after: Option<u64>) -> LlmError {
        LlmError::Status {
            provider: "p",
            status,
            message: String::new(),
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn one_policy_for_every_failure() {
        let r = Retry { max: 3, base: Duration::from_millis(100) };
        assert_eq!(r.wait(0, &status(429, None), false), Some(Duration::from_millis(100)));
        assert_eq!(r.wait(2, &status(503, None), false), Some(Duration::from_millis(400)));
        assert_eq!(r.wait(3, &status(503, None), false), None, "attempts are counted across kinds");
        assert_eq!(r.wait(0, &status(529, Some(7)), false), Some(Duration::from_secs(7)));
        assert_eq!(r.wait(0, &status(429, Some(61)), false), None, "a wait past the ceiling is not honoured");
        assert_eq!(r.wait(0, &status(400, None), false), None);
        let cut = LlmError::Interrupted { provider: "p", status: None, message: String::new(), retryable: true };
        assert_eq!(r.wait(1, &cut, false), Some(Duration::from_millis(200)));
        assert_eq!(r.wait(1, &cut, true), None, "text already shown is not shown twice");
        let refused =
            LlmError::Interrupted { provider: "p", status: Some(400), message: String::new(), retryable: false };
        assert_eq!(r.wait(0, &refused, false), None);
        let down = LlmError::Transport { provider: "p", message: String::new() };
        assert_eq!(r.wait(0, &down, false), Some(Duration::from_millis(100)));
        let no_projector = LlmError::Status {
            provider: "p",
            status: 500,
            message: "image input is not supported - hint: you may need to provide the mmproj".into(),
            retry_after: None,
        };
        assert!(no_projector.refuses_images());
        assert_eq!(r.wait(0, &no_projector, false), None, "a server without vision is not asked again");
        let busy =
            LlmError::Status { provider: "p", status: 503, message: "image service busy".into(), retry_after: None };
        assert!(!busy.refuses_images() && r.wait(0, &busy, false).is_some(), "overload is not a refusal");
    }
}
