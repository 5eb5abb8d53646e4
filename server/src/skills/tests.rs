use std::path::{Path, PathBuf};

use super::find::find_in;
use super::frontmatter::{parse, Scalar};
use super::*;

struct Dirs {
    base: PathBuf,
}

impl Dirs {
    fn new(name: &str) -> Dirs {
        let base = std::env::temp_dir().join(format!("stepwise-skills-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("ws")).unwrap();
        std::fs::create_dir_all(base.join("home")).unwrap();
        Dirs { base: base.canonicalize().unwrap() }
    }
    fn ws(&self) -> PathBuf {
        self.base.join("ws")
    }
    /// The four folders as `folders` gives them, the user's under `home/`.
    fn folders(&self) -> Vec<(PathBuf, Option<PathBuf>, Scope)> {
        let ws = |rel: &str| (self.ws().join(rel), Some(PathBuf::from(rel)), Scope::Workspace);
        vec![
            ws(".agents/skills"),
            ws(".claude/skills"),
            (self.base.join("home/.agents/skills"), None, Scope::User),
            (self.base.join("home/.config/stepwise/skills"), None, Scope::User),
        ]
    }
    fn find(&self) -> Skills {
        find_in(&self.ws(), self.folders())
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn skill(folder: &Path, name: &str, front: &str, body: &str) -> PathBuf {
    let dir = folder.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(FILE), format!("---\n{front}\n---\n{body}")).unwrap();
    dir
}

fn good(folder: &Path, name: &str, description: &str) -> PathBuf {
    skill(folder, name, &format!("name: {name}\ndescription: {description}"), &format!("How to {name}.\n"))
}

fn text(fields: &std::collections::HashMap<String, Option<Scalar>>, key: &str) -> String {
    fields[key].as_ref().unwrap().text.clone()
}

#[test]
fn the_frontmatter_reads_the_scalars_skills_use_and_skips_mappings_and_lists() {
    let t = "\u{feff}---\r\nname: release   # the folder's name\r\ndescription: >-\r\n  How we release:\r\n  tag, build,\r\n\r\n  publish.\r\nlicense: 'Apache-2.0 ''or'' MIT'\r\nmetadata:\r\n  author: me\r\n  version: \"1.0\"\r\nallowed-tools:\r\n- Bash\r\n- Read\r\ncompatibility: \"needs \\\"git\\\"\r\n  and \\u00e9\"\r\nliteral: |\r\n  one\r\n    two\r\nplain: a\r\n  b\r\nflow: [a, b]\r\n---\r\n# Body\r\n";
    let f = parse(t).unwrap();
    assert_eq!(text(&f.fields, "name"), "release");
    assert_eq!(text(&f.fields, "description"), "How we release: tag, build,\npublish.");
    assert_eq!(text(&f.fields, "license"), "Apache-2.0 'or' MIT");
    assert_eq!(f.fields["metadata"], None);
    assert_eq!(f.fields["allowed-tools"], None);
    assert_eq!(f.fields["flow"], None);
    assert_eq!(text(&f.fields, "compatibility"), "needs \"git\" and é");
    assert_eq!(text(&f.fields, "literal"), "one\n  two\n");
    assert_eq!(text(&f.fields, "plain"), "a b");
    assert!(f.fields["compatibility"].as_ref().unwrap().quoted);
    assert_eq!(&t[f.body_at..], "# Body\r\n");
}

#[test]
fn a_frontmatter_the_reader_cannot_be_sure_of_is_an_error_naming_its_line() {
    assert!(parse("name: x\n").unwrap_err().contains("must begin with a line `---`"));
    assert!(parse("---\nname: x\n").unwrap_err().contains("no closing line"));
    assert_eq!(parse("---\nname: a\nname: b\n---\n").unwrap_err(), "frontmatter line 3: `name` is given twice");
    assert_eq!(parse("---\nname a\n---\n").unwrap_err(), "frontmatter line 2: expected `key: value`");
    assert_eq!(parse("---\n  name: a\n---\n").unwrap_err(), "frontmatter line 2: indented, but not under a key");
    assert!(parse("---\ndescription: \"open\n---\n").unwrap_err().contains("line 2: the quoted value is not closed"));
    assert!(parse("---\nname: &a x\n---\n").unwrap_err().contains("anchors"));
    // The closing line may be the file's last, and a body may be empty.
    assert_eq!(parse("---\nname: a\n---").unwrap().body_at, 15);
}

#[test]
fn names_and_descriptions_are_checked_as_the_format_says() {
    for ok in ["a", "pdf-processing", "v2", &"x".repeat(64)] {
        assert_eq!(check_name(ok), Ok(()), "{ok}");
    }
    for bad in ["", "PDF", "pdf_x", "-pdf", "pdf-", "pdf--x", "é", &"x".repeat(65)] {
        assert!(check_name(bad).is_err(), "{bad}");
    }
    let meta = |folder: &str, front: &str| super::meta(folder, &parse(&format!("---\n{front}\n---\n")).unwrap());
    assert_eq!(meta("a", "description: d").unwrap_err(), "no `name` in the frontmatter");
    assert_eq!(meta("a", "name: a").unwrap_err(), "no `description` in the frontmatter");
    assert_eq!(meta("a", "name: a\ndescription: ''").unwrap_err(), "`description` is empty");
    assert_eq!(
        meta("b", "name: a\ndescription: d").unwrap_err(),
        "`name` is `a` but the folder is `b`: they must be the same"
    );
    assert_eq!(
        meta("a", &format!("name: a\ndescription: {}", "é".repeat(1025))).unwrap_err(),
        "`description` has 1025 characters; at most 1024"
    );
    assert!(meta("a", &format!("name: a\ndescription: {}", "é".repeat(1024))).is_ok(), "characters, not bytes");
    assert_eq!(meta("a", "name: a\ndescription:\n  k: v").unwrap_err(), "`description` must be text");
    let user_only = |v: &str| meta("a", &format!("name: a\ndescription: d\ndisable-model-invocation: {v}"));
    assert!(user_only("true").unwrap().user_only);
    assert!(!user_only("false").unwrap().user_only);
    assert!(!meta("a", "name: a\ndescription: d").unwrap().user_only);
    assert_eq!(user_only("\"true\"").unwrap_err(), "`disable-model-invocation` must be true or false");
    assert_eq!(user_only("yes").unwrap_err(), "`disable-model-invocation` must be true or false");
}

#[test]
fn skills_are_found_in_each_folder_and_a_name_found_twice_is_the_first_folders() {
    let d = Dirs::new("find");
    let [agents, claude, home, config] = d.folders().into_iter().map(|f| f.0).collect::<Vec<_>>().try_into().unwrap();
    let release = good(&agents, "release", "How we release");
    good(&claude, "api", "Our API conventions");
    good(&home, "mine", "My own habits");
    good(&config, "notes", "Where notes go");
    // The same name in the user's folder and in .claude: the workspace's .agents wins over both.
    let shadow_home = good(&home, "release", "an older release");
    let shadow_claude = good(&claude, "release", "the other tool's release");
    // Not skills: a folder without SKILL.md, a file, a hidden folder.
    std::fs::create_dir_all(agents.join("empty")).unwrap();
    std::fs::write(agents.join("README.md"), "x").unwrap();
    good(&agents, ".hidden", "never");
    let s = d.find();
    let found: Vec<(&str, &str, Scope)> =
        s.list.iter().map(|s| (s.name.as_str(), s.description.as_str(), s.scope)).collect();
    assert_eq!(
        found,
        [
            ("release", "How we release", Scope::Workspace),
            ("api", "Our API conventions", Scope::Workspace),
            ("mine", "My own habits", Scope::User),
            ("notes", "Where notes go", Scope::User),
        ]
    );
    assert_eq!(s.list[0].dir, release);
    let hidden: Vec<(&Path, &Path)> = s.hidden.iter().map(|h| (h.dir.as_path(), h.by.as_path())).collect();
    assert_eq!(hidden, [(shadow_claude.as_path(), release.as_path()), (shadow_home.as_path(), release.as_path())]);
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[test]
fn a_bad_skill_is_skipped_with_its_problem_and_the_others_stay() {
    let d = Dirs::new("bad");
    let agents = d.ws().join(".agents/skills");
    good(&agents, "fine", "Works");
    skill(&agents, "Upper", "name: Upper\ndescription: d", "");
    skill(&agents, "nodesc", "name: nodesc", "");
    skill(&agents, "other", "name: another\ndescription: d", "");
    std::fs::create_dir_all(agents.join("nofront")).unwrap();
    std::fs::write(agents.join("nofront").join(FILE), "# just markdown\n").unwrap();
    std::fs::create_dir_all(agents.join("huge")).unwrap();
    std::fs::write(agents.join("huge").join(FILE), format!("---\nname: huge\n{}", "x: y\n".repeat(5000))).unwrap();
    let s = d.find();
    assert_eq!(s.list.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["fine"]);
    let problems: Vec<(String, &str)> = s
        .problems
        .iter()
        .map(|p| (p.path.strip_prefix(&agents).unwrap().display().to_string(), p.problem.as_str()))
        .collect();
    assert_eq!(
        problems,
        [
            ("Upper/SKILL.md".into(), "`name` `Upper` may hold only lowercase letters, digits and hyphens"),
            ("huge/SKILL.md".into(), "the frontmatter does not close within the first 16 KiB"),
            ("nodesc/SKILL.md".into(), "no `description` in the frontmatter"),
            ("nofront/SKILL.md".into(), "no frontmatter: the file must begin with a line `---`"),
            ("other/SKILL.md".into(), "`name` is `another` but the folder is `other`: they must be the same"),
        ]
    );
}

#[test]
fn a_workspace_skill_is_never_read_through_a_symlink_out_of_it_nor_from_a_fifo() {
    let d = Dirs::new("symlink");
    let agents = d.ws().join(".agents/skills");
    std::fs::create_dir_all(&agents).unwrap();
    // A skill outside the workspace, linked into it: refused. The same link in the user's folder is theirs.
    let outside = good(&d.base.join("outside"), "leak", "read from outside");
    std::os::unix::fs::symlink(&outside, agents.join("leak")).unwrap();
    let home = d.base.join("home/.agents/skills");
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(&outside, home.join("leak")).unwrap();
    // A skill linked from elsewhere in the workspace is the workspace's.
    let shared = good(&d.ws().join("shared"), "shared", "kept elsewhere in the workspace");
    std::os::unix::fs::symlink("../../shared/shared", agents.join("shared")).unwrap();
    // A FIFO in place of SKILL.md: skipped at once, never waited on.
    std::fs::create_dir_all(agents.join("fifo")).unwrap();
    let fifo = std::ffi::CString::new(agents.join("fifo").join(FILE).into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a plain syscall on a path of our own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let (root, folders) = (d.ws(), d.folders());
    std::thread::spawn(move || tx.send(find_in(&root, folders)));
    let s = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("discovery blocked on the FIFO");
    let problems: Vec<(&Path, &str)> = s.problems.iter().map(|p| (p.path.as_path(), p.problem.as_str())).collect();
    assert_eq!(
        problems,
        [
            (agents.join("fifo/SKILL.md").as_path(), "cannot be read: not a regular file"),
            (agents.join("leak/SKILL.md").as_path(), "leads out of the workspace (a symlink)"),
        ]
    );
    let found: Vec<(&str, Scope)> = s.list.iter().map(|s| (s.name.as_str(), s.scope)).collect();
    assert_eq!(found, [("shared", Scope::Workspace), ("leak", Scope::User)]);
    assert_eq!(s.list[1].dir, home.join("leak"));
    assert!(s.load_for_model("shared").unwrap().contains("How to shared."), "{shared:?}");
}

#[test]
fn the_catalogue_lists_what_the_model_may_load_one_a_line() {
    let d = Dirs::new("catalogue");
    let agents = d.ws().join(".agents/skills");
    assert_eq!(d.find().catalogue(), "", "no skills, no heading");
    skill(&agents, "release", "name: release\ndescription: |\n  How we release:\n  tag and publish.", "");
    good(&agents, "api", "Our API conventions");
    skill(&agents, "deploy", "name: deploy\ndescription: Deploys\ndisable-model-invocation: true", "");
    let s = d.find();
    assert_eq!(
        s.catalogue(),
        format!("\n\n{HEADING}\n- api: Our API conventions\n- release: How we release: tag and publish.")
    );
    assert!(s.offered());
    assert!(s.get("deploy").unwrap().user_only);
}

#[test]
fn the_catalogue_stays_within_its_budget_and_counts_what_it_left_out() {
    let d = Dirs::new("budget");
    let agents = d.ws().join(".agents/skills");
    // 50 skills of 200-character descriptions: about 10,500 characters of lines.
    for i in 0..50 {
        good(&agents, &format!("skill-{i:02}"), &format!("{i:02}{}", "d".repeat(198)));
    }
    let c = d.find().catalogue();
    assert!(c.chars().count() <= CATALOGUE_MAX, "{}", c.chars().count());
    let listed = c.lines().filter(|l| l.starts_with("- skill-")).count();
    assert!(listed > 30 && listed < 50, "{listed}");
    assert!(c.ends_with(&format!("\n({} more skills not listed)", 50 - listed)), "{}", &c[c.len() - 80..]);
    assert!(c.contains("- skill-00: 00ddd"), "the first found are the ones listed");
    // One short of fitting: the count is singular.
    let one = d.find();
    let mut two = one.clone();
    two.list.truncate(listed + 1);
    assert!(two.catalogue().ends_with("\n(1 more skill not listed)"));
}

#[test]
fn load_skill_answers_the_body_and_the_folder_or_says_what_it_knows() {
    let d = Dirs::new("load");
    let agents = d.ws().join(".agents/skills");
    let dir = skill(&agents, "release", "name: release\ndescription: d", "\n# Release\n\nRun scripts/tag.sh.\n\n");
    skill(&agents, "deploy", "name: deploy\ndescription: d\ndisable-model-invocation: true", "Deploy it.");
    good(&agents, "api", "d");
    let s = d.find();
    assert_eq!(
        s.load_for_model("release").unwrap(),
        format!("<skill name=\"release\" path=\"{}\">\n# Release\n\nRun scripts/tag.sh.\n</skill>", dir.display())
    );
    assert_eq!(s.load_for_model("nope").unwrap_err(), "unknown skill 'nope'. Known skills: api, release");
    assert!(s.load_for_model("deploy").unwrap_err().contains("only the user calls"));
    // The user calls any skill, those only they may call too; a name that is not a skill is no call.
    let (skill, block) = s.expand("  /deploy to staging").unwrap();
    assert_eq!(skill.name, "deploy");
    assert!(block.unwrap().ends_with("\">\nDeploy it.\n</skill>"));
    assert!(s.expand("/nope x").is_none());
    assert!(s.expand("release").is_none());
    assert!(s.expand("/releases").is_none());
    assert!(is_block(&s.load_for_model("api").unwrap()));
    // Changed since the run found it: read again and checked again.
    std::fs::write(dir.join(FILE), "---\nname: other\ndescription: d\n---\n").unwrap();
    assert!(s.load_for_model("release").unwrap_err().contains("`name` is `other` but the folder is `release`"));
    std::fs::write(dir.join(FILE), format!("---\nname: release\ndescription: d\n---\n{}", "x".repeat(300_000)))
        .unwrap();
    let cut = s.load_for_model("release").unwrap();
    assert!(cut.len() < MAX_BYTES as usize + 300, "{}", cut.len());
    assert!(cut.contains(&format!("[cut: a skill is read up to 256 KiB; the rest is in {}]", dir.join(FILE).display())));
}

#[test]
fn a_description_on_one_line_is_the_same_by_the_quick_way_and_the_whole() {
    let skill = |d: &str| Skill {
        name: "x".into(),
        description: d.into(),
        dir: PathBuf::new(),
        scope: Scope::User,
        user_only: false,
        rel: None,
    };
    for d in [
        "Plain words, one space each.",
        "  leading",
        "trailing ",
        "two  spaces",
        "a\tb",
        "a\nb\n\nc",
        "vertical\u{b}tab",
        "no\u{a0}break space",
        "ideographic\u{3000}space",
        "é accented",
        "",
    ] {
        assert_eq!(skill(d).one_line(), d.split_whitespace().collect::<Vec<_>>().join(" "), "{d:?}");
    }
}
