//! Recording model responses to a file and playing them back without a model.
//!
//! The format is JSON lines, one `ModelResponse` per line, so a recording can be read and edited by hand.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use super::{LlmError, ModelResponse};

pub struct Recorder {
    file: std::io::BufWriter<std::fs::File>,
}

impl Recorder {
    pub fn create(path: PathBuf) -> std::io::Result<Recorder> {
        Ok(Recorder { file: std::io::BufWriter::new(std::fs::File::create(path)?) })
    }

    pub fn write(&mut self, resp: &ModelResponse) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.file, resp)?;
        self.file.write_all(b"\n")?;
        self.file.flush()
    }
}

pub struct Replay {
    responses: Mutex<VecDeque<ModelResponse>>,
    /// Pause between streamed words, so a replay looks like a live session.
    pace: Duration,
}

impl Replay {
    pub fn parse(text: &str) -> Result<Replay, String> {
        let mut responses = VecDeque::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let r: ModelResponse =
                serde_json::from_str(line).map_err(|e| format!("line {}: not a recorded response: {e}", n + 1))?;
            responses.push_back(r);
        }
        Ok(Replay { responses: Mutex::new(responses), pace: Duration::ZERO })
    }

    pub fn load(path: &std::path::Path) -> Result<Replay, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Replay::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn with_pace(mut self, pace: Duration) -> Replay {
        self.pace = pace;
        self
    }

    pub async fn next(&self, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<ModelResponse, LlmError> {
        let next = self.responses.lock().ok().and_then(|mut q| q.pop_front());
        let resp = next.ok_or_else(|| LlmError::Other("the recorded session has no more responses".into()))?;
        let text = resp.text();
        for word in text.split_inclusive(' ') {
            if !self.pace.is_zero() {
                tokio::time::sleep(self.pace).await;
            }
            on_text(word);
        }
        Ok(resp)
    }
}
