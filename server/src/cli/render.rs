//! The terminal's event sink: the plan in colour, streamed text, tool lines and a spinner.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::events::{Event, EventSink};
use crate::plan::{Plan, PlanningStyle};
use crate::tools::summary as tools_summary;

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";

pub struct Terminal {
    color: bool,
    spinner: Option<Arc<AtomicBool>>,
    /// The latest prompt's size and the context window, for the end-of-run line.
    context: std::sync::Mutex<(u64, u64)>,
}

impl Terminal {
    pub fn new(color: bool, spinner: bool) -> Terminal {
        let spinner = spinner.then(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let f = flag.clone();
            // A plain thread: the spinner must keep turning while the runtime is busy.
            std::thread::spawn(move || {
                let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
                let mut i = 0usize;
                let mut shown = false;
                loop {
                    std::thread::sleep(Duration::from_millis(90));
                    let mut err = std::io::stderr().lock();
                    if f.load(Ordering::Relaxed) {
                        let _ = write!(err, "\r{DIM}{} thinking…{RESET}", frames[i % frames.len()]);
                        shown = true;
                        i += 1;
                    } else if shown {
                        let _ = write!(err, "\r\x1b[2K");
                        shown = false;
                    }
                    let _ = err.flush();
                }
            });
            flag
        });
        Terminal { color, spinner, context: std::sync::Mutex::new((0, 0)) }
    }

    fn spin(&self, on: bool) {
        if let Some(s) = &self.spinner {
            if s.swap(on, Ordering::Relaxed) && !on {
                // Clear the line before anything else prints.
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            }
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("{code}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    pub fn plan_text(&self, plan: &Plan) -> String {
        if !self.color {
            return plan.render();
        }
        let mut out = String::new();
        for line in plan.render().lines() {
            let code = if line.starts_with("[ ]") {
                "\x1b[33m"
            } else if line.starts_with("[>]") {
                "\x1b[36m"
            } else if line.starts_with("[x]") {
                "\x1b[32m"
            } else if line.starts_with("[!]") {
                "\x1b[31m"
            } else {
                ""
            };
            if code.is_empty() {
                out.push_str(line);
            } else {
                out.push_str(&self.paint(code, line));
            }
            out.push('\n');
        }
        out.trim_end().to_string()
    }
}

impl EventSink for Terminal {
    fn emit(&self, event: Event<'_>) {
        let mut out = std::io::stdout().lock();
        match event {
            Event::Thinking { .. } => {
                drop(out);
                self.spin(true);
                return;
            }
            Event::AssistantText { text } => {
                self.spin(false);
                let _ = write!(out, "{text}");
            }
            Event::ToolStarted { name, input, .. } => {
                self.spin(false);
                let line = format!("> {name}: {}", tools_summary(name, input));
                let _ = writeln!(out, "\n{}", self.paint("\x1b[1m", &line));
            }
            Event::ToolFinished { name, output, is_error, .. } => {
                // A plan is printed when it changes; other outputs are shown short, as in the seed.
                if !PlanningStyle::any_is_planning_tool(name) || is_error {
                    let short = crate::host::output::truncate_chars(output, 200);
                    let _ = writeln!(out, "{}", self.paint(DIM, short));
                }
            }
            Event::PlanChanged { plan } => {
                let _ = writeln!(out, "{}", self.plan_text(plan));
            }
            Event::Reminder { text } => {
                let _ = writeln!(out, "{}", self.paint("\x1b[35m", text));
            }
            Event::Compacted { tokens_before, tokens_after, error } => {
                self.spin(false);
                let mut err = std::io::stderr().lock();
                let line = format!(
                    "[compacted the conversation: about {tokens_before} → {tokens_after} tokens; the plan is kept]"
                );
                let _ = writeln!(err, "{}", self.paint(DIM, &line));
                if let Some(e) = error {
                    let _ = writeln!(
                        err,
                        "{}",
                        self.paint("\x1b[33m", &format!("warning: {e}; old tool results were shortened instead"))
                    );
                }
            }
            Event::Usage { round, context_window, .. } => {
                if let Ok(mut c) = self.context.lock() {
                    *c = (round.input_tokens, context_window);
                }
                self.spin(false)
            }
            Event::RunFinished { outcome } => {
                self.spin(false);
                let _ = writeln!(out);
                let _ = out.flush();
                let mut err = std::io::stderr().lock();
                let context = self.context.lock().map(|c| *c).unwrap_or_default();
                let _ = writeln!(err, "{}", self.paint(DIM, &end_line(outcome, context)));
                if let Some(e) = &outcome.error {
                    let _ = writeln!(err, "{}", self.paint("\x1b[31m", &format!("error: {e}")));
                }
            }
        }
        let _ = out.flush();
    }
}

/// `[end_turn: 3 rounds, 12000 input tokens (9000 cached) / 300 output · context 6% of 200000]`
pub fn end_line(outcome: &crate::session::RunOutcome, (context, window): (u64, u64)) -> String {
    let u = outcome.usage;
    let cached = if u.cache_read_tokens > 0 { format!(" ({} cached)", u.cache_read_tokens) } else { String::new() };
    let context = if window > 0 && context > 0 {
        format!(" · context {}% of {window}", (100 * context).div_ceil(window))
    } else {
        String::new()
    };
    format!(
        "[{}: {} rounds, {} input tokens{cached} / {} output{context}]",
        outcome.reason.as_str(),
        outcome.rounds,
        u.input_tokens,
        u.output_tokens
    )
}
