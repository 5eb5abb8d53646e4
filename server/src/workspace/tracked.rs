//! `Tracked`: any host, with the checkpoint hooks around its file tools and shell commands, so a front end
//! wires checkpoints by wrapping its host (and taking a checkpoint before each round).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use crate::checkpoint::{self, Checkpoints};
use crate::host::preview::Preview;
use crate::host::{Approval, Ask, EditContext, FileChange, Host, ResolvedPath, ShellOutput};
use crate::intel::session::{Before, Held};
use crate::locks;

pub struct Tracked<'a, H: ?Sized> {
    inner: &'a H,
    checkpoints: Option<&'a Mutex<Checkpoints>>,
    /// Told of every file the agent changes, so the language servers start on it at once.
    intel: Option<&'a crate::intel::Session>,
    /// The session's memory of what its file tools saw, and its siblings in the folder (`sessions/`).
    session: Option<crate::sessions::Hooks<'a>>,
}

impl<'a, H: Host + ?Sized> Tracked<'a, H> {
    /// `inner` with the hooks; without checkpoints, `inner` as it is.
    pub fn new(inner: &'a H, checkpoints: Option<&'a Mutex<Checkpoints>>) -> Tracked<'a, H> {
        Tracked { inner, checkpoints, intel: None, session: None }
    }

    /// With the session's memory of what its file tools saw (`write_file` over a file changed since is
    /// refused) and its siblings told of its writes and commands.
    pub fn with_session(self, session: crate::sessions::Hooks<'a>) -> Tracked<'a, H> {
        Tracked { session: Some(session), ..self }
    }

    /// With code intelligence told of each change (file tools, renames, what a command changed).
    pub fn with_intel(self, intel: Option<&'a crate::intel::Session>) -> Tracked<'a, H> {
        Tracked { intel, ..self }
    }

    fn with(&self, f: impl FnOnce(&mut Checkpoints)) {
        if let Some(c) = self.checkpoints {
            f(&mut locks::lock(c));
        }
    }
}

impl<H: Host + ?Sized> Host for Tracked<'_, H> {
    fn root(&self) -> &Path {
        self.inner.root()
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        self.inner.read_file(path).await
    }

    /// The agent's read: an editor is asked in the background for the file's errors, so those there before
    /// the agent changes it are not claimed as new.
    async fn read_preview(&self, path: &ResolvedPath, limit: Option<u64>) -> Result<Preview, String> {
        let preview = self.inner.read_preview(path, limit).await?;
        if let Some(intel) = self.intel {
            intel.read(&path.abs);
        }
        if let Some(s) = &self.session {
            // The whole text's fingerprint, where the read saw all of it; a preview of a large file that
            // stopped at the cap leaves the file unremembered (a write over it is not checked).
            match preview.whole {
                Some(h) => s.seen.saw_hash(&path.rel, h),
                None => s.seen.forget(&path.rel),
            }
        }
        Ok(preview)
    }

    /// Keeps what the file held before its first change since the checkpoint: the text the change was
    /// computed from (the host's view, an editor buffer where one is open), or what the disk holds for a
    /// new file.
    async fn apply_change(&self, path: &ResolvedPath, change: &FileChange, ctx: &EditContext) -> Result<(), String> {
        if let Some(s) = &self.session {
            if ctx.tool == crate::tools::catalog::WRITE_FILE.name && s.seen.stale(&path.rel, change.old_text.as_deref())
            {
                return Err(crate::sessions::seen::stale_write(&path.given));
            }
        }
        self.with(|c| c.before_write(&path.rel, change.old_text.as_deref()));
        if let (Some(intel), Some(old)) = (self.intel, change.old_text.as_deref()) {
            intel.before_write(&path.abs, old).await;
        }
        self.inner.apply_change(path, change, ctx).await?;
        self.with(|c| c.after_write(&path.rel, &change.new_text));
        if let Some(s) = &self.session {
            s.seen.saw(&path.rel, &change.new_text);
            if let Some(m) = s.siblings {
                m.wrote(&path.rel);
            }
        }
        if let Some(intel) = self.intel {
            let before = change.old_text.as_deref().map_or(Before::Absent, Before::Text);
            intel.wrote(&path.abs, before, &change.new_text);
        }
        Ok(())
    }

    fn intelligence(&self) -> Option<crate::intel::Source> {
        self.intel.map(|s| s.source.clone()).or_else(|| self.inner.intelligence())
    }

    async fn approve(&self, ask: &Ask<'_>, call_id: &str) -> Approval {
        self.inner.approve(ask, call_id).await
    }

    /// The scans block for a few milliseconds each (see the benchmark); they run on the calling task.
    async fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        sandbox: Option<&crate::sandbox::Policy>,
    ) -> Result<ShellOutput, String> {
        if let Some(intel) = self.intel {
            intel.command_starting().await;
        }
        if let Some(c) = self.checkpoints {
            let changed = locks::lock(c).command_started();
            self.tell_siblings(Some(&changed));
            self.tell_intel(Some(changed));
        }
        // A cancelled run drops this future mid-command: what the command did so far is still recorded.
        let siblings = self.session.as_ref().and_then(|s| s.siblings);
        let _after = AfterCommand(self.checkpoints, self.intel, std::time::SystemTime::now(), siblings);
        self.inner.run_command(command, timeout, sandbox).await
    }

    async fn start_background(
        &self,
        command: &str,
        sandbox: Option<&crate::sandbox::Policy>,
    ) -> Result<crate::background::Started, String> {
        if let Some(intel) = self.intel {
            intel.command_starting().await;
        }
        self.arm();
        self.inner.start_background(command, sandbox).await
    }

    /// Records what the tasks changed since the last look (into the round's checkpoint), and keeps the
    /// scan armed while one still runs. What they changed counts as the round's changes for code
    /// intelligence, as a shell command's do.
    fn background_seen(&self, running: bool) {
        match running {
            true if self.checkpoints.is_some() => self.before_command(),
            _ => {
                let changed = self.checkpoints.map(|c| locks::lock(c).after_command());
                self.tell_siblings(changed.as_deref());
                self.tell_intel(changed);
            }
        }
        self.inner.background_seen(running);
    }
}

impl<H: Host + ?Sized> Tracked<'_, H> {
    /// Arms the scan before a background command starts, so what it changes is recorded.
    pub fn arm(&self) {
        self.before_command();
    }

    /// Records what changed since `arm` (the engine's own writes on disk, `Workspace::apply_files`), as a
    /// command's changes are.
    pub fn settle(&self) {
        let changed = self.checkpoints.map(|c| locks::lock(c).after_command());
        self.tell_siblings(changed.as_deref());
        self.tell_intel(changed);
    }

    /// Arms the scan; what a running background task changed since the last look is recorded by it and
    /// told to code intelligence.
    fn before_command(&self) {
        if let Some(c) = self.checkpoints {
            let changed = locks::lock(c).before_command();
            self.tell_siblings(Some(&changed));
            self.tell_intel(Some(changed));
        }
    }

    /// The folder's other sessions learn what this session's commands changed, and whether its
    /// checkpoints still follow one (its window in time stays open).
    fn tell_siblings(&self, changed: Option<&[std::path::PathBuf]>) {
        if let (Some(m), Some(c), Some(changed)) =
            (self.session.as_ref().and_then(|s| s.siblings), self.checkpoints, changed)
        {
            let following = locks::lock(c).following();
            m.looked(changed, following);
        }
    }

    /// Files changed outside the file tools (`None`: no checkpoints say which) fed to code intelligence.
    fn tell_intel(&self, changed: Option<Vec<std::path::PathBuf>>) {
        match (changed, self.intel, self.checkpoints) {
            (Some(changed), Some(intel), Some(c)) if !changed.is_empty() => told(intel, &changed, c),
            // Without checkpoints (`stepwise run`), at a background task's look: the files fed are looked
            // at again (new files are looked for only after a shell command, whose start is known).
            (None, Some(intel), _) => intel.command_ran_untracked(None),
            _ => {}
        }
    }
}

/// Code intelligence told what a command changed, with what each file held at the round's start (what the
/// checkpoints kept), so a file no source had seen is compared with its text from before.
fn told(intel: &crate::intel::Session, changed: &[std::path::PathBuf], checkpoints: &Mutex<Checkpoints>) {
    intel.command_changed(changed, |rel, max| match locks::lock(checkpoints).held_at_round_start(rel, max)? {
        checkpoint::Held::Nothing => Some(Held::Nothing),
        checkpoint::Held::Bytes(b) => crate::intel::session::text_of(b).map(Held::Text),
    });
}

/// The checkpoints, code intelligence, when the command started, and the session's siblings.
struct AfterCommand<'a>(
    Option<&'a Mutex<Checkpoints>>,
    Option<&'a crate::intel::Session>,
    std::time::SystemTime,
    Option<&'a crate::sessions::Membership>,
);

impl Drop for AfterCommand<'_> {
    fn drop(&mut self) {
        match (self.0, self.1) {
            (Some(c), intel) => {
                let changed = locks::lock(c).command_ended();
                if let Some(m) = self.3 {
                    let following = locks::lock(c).following();
                    m.looked(&changed, following);
                }
                if let Some(intel) = intel {
                    told(intel, &changed, c);
                }
            }
            // No checkpoints (`stepwise run`): the files code intelligence was fed are looked at again.
            (None, Some(intel)) => intel.command_ran_untracked(Some(self.2)),
            (None, None) => {}
        }
    }
}
