//! The terminal's event sink: the plan in colour, streamed text, tool lines and a spinner.
//!
//! Everything is written through `anstream`, which drops the colour codes when the stream is not a
//! terminal or `NO_COLOR` is set; the spinner is indicatif's, drawn on stderr only when it is a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::events::{Event, EventSink};
use crate::locks;
use crate::plan::Plan;
use crate::tools::summary as tools_summary;

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";

pub struct Terminal {
    /// Shown while the model is asked; `None` between requests.
    spinner: Mutex<Option<ProgressBar>>,
    /// Whether stderr is a terminal: a spinner nobody sees would still start its ticking thread every
    /// round (a tenth of a round's time where stepwise runs under a script or an editor).
    spins: bool,
    /// The latest prompt's size and the context window, for the end-of-run line.
    context: Mutex<(u64, u64)>,
    /// Standard output, whether it takes colour decided once: a stream made per event asked the
    /// terminal each time (an `ioctl` per event, about a dozen a round).
    out: Mutex<anstream::AutoStream<std::io::Stdout>>,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal::new()
    }
}

impl Terminal {
    pub fn new() -> Terminal {
        Terminal {
            spinner: Mutex::new(None),
            spins: std::io::stderr().is_terminal(),
            context: Mutex::new((0, 0)),
            out: Mutex::new(anstream::stdout()),
        }
    }

    fn spin(&self, on: bool) {
        if !self.spins {
            return;
        }
        let mut slot = locks::lock(&self.spinner);
        match (on, slot.take()) {
            (true, None) => {
                // Its own ticking thread: the spinner keeps turning while the runtime is busy.
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{spinner:.dim} {msg:.dim}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message("thinking…");
                bar.enable_steady_tick(Duration::from_millis(90));
                *slot = Some(bar);
            }
            (true, Some(bar)) => *slot = Some(bar),
            // Cleared before anything else prints.
            (false, Some(bar)) => bar.finish_and_clear(),
            (false, None) => {}
        }
    }

    /// Runs `f` with the spinner off the screen (a question on the terminal, for example).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match locks::lock(&self.spinner).as_ref() {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        format!("{code}{text}{RESET}")
    }

    pub fn plan_text(&self, plan: &Plan) -> String {
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
        let mut out = locks::lock(&self.out);
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
                if !crate::tools::catalog::is_planning(name) || is_error {
                    let short = crate::host::output::truncate_chars(output, 200);
                    let _ = writeln!(out, "{}", self.paint(DIM, short));
                }
            }
            Event::PlanChanged { state } => {
                let _ = writeln!(out, "{}", self.plan_text(&state.plan));
            }
            Event::Reminder { text } => {
                let _ = writeln!(out, "{}", self.paint("\x1b[35m", text));
            }
            // Under the round's last call: the errors the model is told of, a line each.
            Event::Diagnostics { text, .. } => {
                for line in text.lines().filter(|l| !l.starts_with("<diagnostics>") && !l.starts_with("</diagnostics>"))
                {
                    let _ = writeln!(out, "  {}", self.paint("\x1b[31m", line));
                }
            }
            Event::Compacted { tokens_before, tokens_after, error } => {
                self.spin(false);
                let mut err = anstream::stderr().lock();
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
                *locks::lock(&self.context) = (round.input_tokens, context_window);
                self.spin(false)
            }
            // Listed on demand (`/checkpoints`), not announced in the transcript.
            Event::Checkpoint { .. } => return,
            Event::Subagent { id, description, agent, state, rounds, tokens, .. } => {
                let line = match state {
                    crate::subagents::State::Running if rounds == 0 => format!("  {id} ({agent}): {description}"),
                    crate::subagents::State::Running => return,
                    _ => format!("  {id} {}: {rounds} rounds, {tokens} tokens", state.as_str()),
                };
                self.spin(false);
                let _ = writeln!(out, "{}", self.paint(DIM, &line));
            }
            // A child's calls, indented under its `task` call and named for it (children run at once).
            Event::Child { id, inner } => {
                let lines = match inner {
                    Event::ToolStarted { name, input, .. } => {
                        vec![self.paint("\x1b[1m", &format!("  {id} > {name}: {}", tools_summary(name, input)))]
                    }
                    Event::ToolFinished { name, output, is_error, .. }
                        if !crate::tools::catalog::is_planning(name) || *is_error =>
                    {
                        let short = crate::host::output::truncate_chars(output, 200);
                        short.lines().map(|l| self.paint(DIM, &format!("  {id}   {l}"))).collect()
                    }
                    Event::PlanChanged { state } => {
                        self.plan_text(&state.plan).lines().map(|l| format!("  {id}   {l}")).collect()
                    }
                    _ => return,
                };
                self.spin(false);
                for line in lines {
                    let _ = writeln!(out, "{line}");
                }
            }
            Event::RunFinished { outcome } => {
                self.spin(false);
                let _ = writeln!(out);
                let _ = out.flush();
                let mut err = anstream::stderr().lock();
                let context = *locks::lock(&self.context);
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
