//! Incrementality claims, checked against salsa's record of executed queries: the person
//! model's per-file firewall, and an estate's catalogue, admission, selection and bundle
//! queries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use acompose_engine::bundle::composition_bundle;
use acompose_engine::catalogue::{Catalogue, Summarized, catalogue_listing, catalogue_names};
use acompose_engine::compose::{Composition, CompositionSource, RepositoryInput, SourceKind};
use acompose_engine::file_queries::{file_summary, skill_check, skill_document};
use acompose_engine::person::person_model;
use acompose_engine::provider::{role_view, trusted_root};
use acompose_engine::request::Delivery;
use acompose_engine::skill_rules::SkillPolicy;
use acompose_engine::syntax::kdl_document;
use acompose_engine::{Bytes, Database, Package, PackageKind, PersonSource, SourceFile};
use salsa::Setter;

fn load_embedded(db: &Database) -> (PersonSource, Vec<SourceFile>) {
    let files: Vec<SourceFile> = acompose_roster::files()
        .iter()
        .map(|(path, bytes)| SourceFile::new(db, "pkg".to_owned(), (*path).to_owned(), bytes.to_vec().into()))
        .collect();
    let package = Package::new(db, "pkg".to_owned(), PackageKind::Person, false, files.clone(), Vec::new());
    (PersonSource::new(db, package, Vec::new(), true), files)
}

fn executed_named(executed: &[String], query: &str) -> usize {
    executed.iter().filter(|entry| entry.starts_with(&format!("{query}("))).count()
}

#[test]
fn editing_one_role_file_reparses_only_that_role() {
    let mut db = Database::with_execution_log();
    let (source, files) = load_embedded(&db);
    let model = person_model(&db, source);
    assert!(!model.has_errors(), "{:?}", model.diagnostics);
    let first = db.take_executed();
    assert_eq!(executed_named(&first, "role_declaration"), 7, "{first:#?}");

    let edited =
        files.iter().copied().find(|file| file.relative_path(&db) == "roles/03-eval.kdl").expect("eval role file");
    let text = String::from_utf8(edited.bytes(&db).to_vec()).expect("utf-8");
    edited.set_bytes(&mut db).to(text.replace("purpose \"", "purpose \"Carefully: ").into_bytes().into());
    let model = person_model(&db, source);
    assert!(!model.has_errors(), "{:?}", model.diagnostics);
    assert!(model.value.role("eval").is_some_and(|role| role.purpose.starts_with("Carefully: ")));

    let second = db.take_executed();
    assert_eq!(executed_named(&second, "role_declaration"), 1, "only the edited role re-parses: {second:#?}");
    assert_eq!(executed_named(&second, "kdl_document"), 1, "{second:#?}");
    assert_eq!(executed_named(&second, "personality_declaration"), 0, "{second:#?}");
    assert_eq!(executed_named(&second, "package_layout"), 0, "layout reads paths only: {second:#?}");
}

#[test]
fn editing_one_skill_body_does_not_reparse_any_kdl() {
    let mut db = Database::with_execution_log();
    let (source, files) = load_embedded(&db);
    assert!(!person_model(&db, source).has_errors());
    db.take_executed();
    let skill = files
        .iter()
        .copied()
        .find(|file| file.relative_path(&db) == "roles/platform/SKILL.md")
        .expect("platform skill");
    let text = String::from_utf8(skill.bytes(&db).to_vec()).expect("utf-8");
    skill.set_bytes(&mut db).to(format!("{text}\nOne more paragraph.\n").into_bytes().into());
    assert!(!person_model(&db, source).has_errors());
    let executed = db.take_executed();
    assert_eq!(executed_named(&executed, "kdl_document"), 0, "{executed:#?}");
    assert_eq!(executed_named(&executed, "parsed_document"), 1, "{executed:#?}");
}

#[test]
fn an_unchanged_revision_recomputes_nothing() {
    let db = Database::with_execution_log();
    let (source, _) = load_embedded(&db);
    let first = person_model(&db, source).clone();
    db.take_executed();
    let second = person_model(&db, source).clone();
    assert_eq!(first, second);
    assert!(db.take_executed().is_empty());
}

// An estate in memory: a trusted root, three skill repositories and the roster's roles,
// set on the engine's database as the driver's loader and session set them.

const ESTATE_ROLES: &str = "repositories {
    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }
    repository benchmarks path=\"example/benchmarks\"
    repository archive path=\"example/archive\"
}
roles {
    role platform { use-repository hardware; composed-skill \"design-*\"; }
    role sysadmin { use-repository hardware; }
    role eval { use-repository benchmarks; composed-skill \"metrics-*\"; }
}
";

const ROLES_FILE: &str = "acme/root/.agents/roles.kdl";

fn skill_text(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\n# {name}\n\n{body}\n")
}

/// The repositories of the estate, the operating-context root first, with their files
/// relative to each repository.
fn estate_repositories() -> Vec<(&'static str, Vec<(String, String)>)> {
    let ordinary = |name: &str, body: &str| (format!(".agents/skills/{name}/SKILL.md"), skill_text(name, body));
    let composed = |name: &str, body: &str| (format!(".agents/composed/{name}/COMPOSED.md"), skill_text(name, body));
    vec![
        (
            "acme/root",
            vec![
                (".agents/roles.kdl".to_owned(), ESTATE_ROLES.to_owned()),
                ordinary("estate-map", "Where things are."),
                composed("design-review", "Review designs."),
                composed("metrics-board", "Read metrics."),
            ],
        ),
        (
            "example/hardware",
            vec![
                ordinary("machine-cpu", "Processors."),
                ordinary("machine-gpu", "Graphics cards."),
                (".agents/skills/machine-gpu/references/drivers.md".to_owned(), "Driver notes.\n".to_owned()),
                ordinary("compute-stack", "The whole stack."),
            ],
        ),
        ("example/benchmarks", vec![ordinary("bench-harness", "Run them."), ordinary("bench-report", "Report them.")]),
        ("example/archive", vec![ordinary("old-notes", "Kept for history.")]),
    ]
}

/// How catalogue skill files are held: with their bytes, so the per-file queries run on
/// them (as for a compiled compose), or summarized as the loader reads them for native
/// delivery, so no per-file memo exists.
#[derive(Debug, Clone, Copy)]
enum Held {
    Bytes,
    Summaries,
}

struct Estate {
    db: Database,
    /// Every catalogue file by its display path (`example/hardware/.agents/…`).
    files: BTreeMap<String, SourceFile>,
    /// Every repository's catalogue by its path, the root's first.
    catalogues: Vec<(&'static str, Catalogue)>,
    /// One composition per role of the roster, by slug.
    compositions: BTreeMap<String, Composition>,
    /// A query's key as salsa writes it (`catalogue_listing(Id(c01))`) → the same query
    /// named with what it is about (`catalogue_listing(example/hardware)`).
    labels: BTreeMap<String, String>,
}

impl Estate {
    /// The estate with every role's bundle composed once and the execution log cleared.
    fn composed(held: Held) -> Estate {
        let db = Database::with_execution_log();
        let (person, _) = load_embedded(&db);
        let mut files = BTreeMap::new();
        let mut catalogues = Vec::new();
        for (label, contents) in estate_repositories() {
            let mut held_files: Vec<SourceFile> = contents
                .iter()
                .map(|(relative, text)| new_catalogue_file(&db, held, label, relative, text.as_bytes()))
                .collect();
            held_files.sort_by(|a, b| a.relative_path(&db).cmp(b.relative_path(&db)));
            for file in &held_files {
                files.insert(file.display_path(&db), *file);
            }
            catalogues.push((label, Catalogue::new(&db, label.to_owned(), true, held_files, Vec::new())));
        }
        let (root_label, root) = catalogues[0];
        let sources = vec![CompositionSource {
            id: "root".to_owned(),
            kind: SourceKind::Root,
            required: true,
            location: root_label.to_owned(),
            path_key: format!("projects/{root_label}"),
            catalogue: root,
            span: None,
        }];
        let repositories: Vec<RepositoryInput> = catalogues[1..]
            .iter()
            .map(|(label, catalogue)| RepositoryInput {
                path: (*label).to_owned(),
                path_key: format!("projects/{label}"),
                catalogue: *catalogue,
            })
            .collect();
        let model = person_model(&db, person).value.clone();
        let compositions = model
            .roles
            .iter()
            .map(|role| {
                let tier = if role.model_tiers.iter().any(|tier| tier == "frontier") {
                    "frontier".to_owned()
                } else {
                    role.model_tiers[0].clone()
                };
                let composition = Composition::new(
                    &db,
                    person,
                    role.slug.clone(),
                    Delivery::NativeSkills,
                    tier,
                    sources.clone(),
                    repositories.clone(),
                    "repository-plan.json".to_owned(),
                    None,
                    None,
                    SkillPolicy::Warn,
                );
                (role.slug.clone(), composition)
            })
            .collect();
        let mut estate = Estate { db, files, catalogues, compositions, labels: BTreeMap::new() };
        estate.learn("roster");
        estate.learn_labels();
        estate
    }

    /// Runs the estate's queries from the bottom up, one subject at a time, so that each
    /// step executes only the queries of its subject and can name them.
    fn learn_labels(&mut self) {
        for (path, file) in self.files.clone() {
            match path.rsplit('/').next() {
                Some("roles.kdl") => {
                    kdl_document(&self.db, file);
                    self.learn(&path);
                    trusted_root(&self.db, file);
                }
                Some("SKILL.md") => {
                    file_summary(&self.db, file);
                    self.learn(&path);
                    skill_document(&self.db, file);
                    self.learn(&path);
                    skill_check(&self.db, file);
                }
                Some("COMPOSED.md") => {
                    file_summary(&self.db, file);
                    self.learn(&path);
                    skill_document(&self.db, file);
                }
                _ => {
                    file_summary(&self.db, file);
                }
            }
            self.learn(&path);
            acompose_engine::file_queries::file_audit(&self.db, file);
            self.learn(&path);
        }
        for (label, catalogue) in self.catalogues.clone() {
            catalogue_names(&self.db, catalogue);
            self.learn(label);
            catalogue_listing(&self.db, catalogue);
            self.learn(label);
        }
        let root = self.catalogues[0].1;
        for (role, composition) in self.compositions.clone() {
            role_view(&self.db, root, role.clone());
            self.learn(&role);
            let bundle = composition_bundle(&self.db, composition);
            assert!(bundle.value.is_some() && !bundle.has_errors(), "{role}: {:#?}", bundle.diagnostics);
            self.learn(&role);
        }
        // A step that ran a query of another subject would give two keys one name.
        let mut named = BTreeSet::new();
        for label in self.labels.values().filter(|label| !label.ends_with("(roster)")) {
            assert!(named.insert(label), "two queries named `{label}`");
        }
    }

    /// Names the queries executed since the last call after `subject`.
    fn learn(&mut self, subject: &str) {
        for key in self.db.take_executed() {
            let query = key.split('(').next().unwrap_or_default().to_owned();
            self.labels.entry(key).or_insert_with(|| format!("{query}({subject})"));
        }
    }

    /// Replaces a catalogue file's text the way the loader does: its bytes, or its summary
    /// when it was read summarized.
    fn edit(&mut self, path: &str, text: &str) {
        let file = self.files[path];
        match file.summary(&self.db) {
            Some(_) => {
                let relative = file.relative_path(&self.db).clone();
                let summary = Summarized::of(PathBuf::from(path), path, &relative, text.as_bytes());
                file.set_summary(&mut self.db).to(Some(Arc::new(summary)));
            }
            None => {
                file.set_bytes(&mut self.db).to(text.as_bytes().into());
            }
        }
    }

    /// Every role's bundle id (composing what is not memoized).
    fn bundle_ids(&self) -> BTreeMap<String, String> {
        self.compositions
            .iter()
            .map(|(role, composition)| {
                let bundle = composition_bundle(&self.db, *composition);
                let id = bundle.value.as_ref().map(|bundle| bundle.id.clone());
                (role.clone(), id.unwrap_or_else(|| panic!("{role}: {:#?}", bundle.diagnostics)))
            })
            .collect()
    }

    /// Composes every role's bundle again; returns the roles whose bundle id changed and
    /// the queries that executed, named, sorted, one a line.
    fn recompose(&self, before: &BTreeMap<String, String>) -> (Vec<String>, String) {
        let after = self.bundle_ids();
        let changed = after.iter().filter(|(role, id)| before[*role] != **id).map(|(role, _)| role.clone()).collect();
        let mut executed: Vec<String> =
            self.db.take_executed().into_iter().map(|key| self.labels.get(&key).cloned().unwrap_or(key)).collect();
        executed.sort();
        (changed, executed.join("\n"))
    }
}

/// A catalogue file as the loader sets it: a file inside a skill folder summarized when
/// skills are held as summaries, every other file with its bytes.
fn new_catalogue_file(db: &Database, held: Held, label: &str, relative: &str, bytes: &[u8]) -> SourceFile {
    match held {
        Held::Summaries if Summarized::applies_to(relative) => {
            let display = format!("{label}/{relative}");
            let summary = Summarized::of(PathBuf::from(&display), &display, relative, bytes);
            SourceFile::builder(label.to_owned(), relative.to_owned(), Bytes::default())
                .summary(Some(Arc::new(summary)))
                .new(db)
        }
        _ => SourceFile::new(db, label.to_owned(), relative.to_owned(), bytes.to_vec().into()),
    }
}

#[test]
fn editing_one_skill_body_reruns_that_file_its_repository_listing_and_the_bundles_of_the_roles_that_admit_it() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    assert_eq!(before.len(), 7, "one bundle per role of the roster");
    estate.edit(
        "example/hardware/.agents/skills/machine-gpu/SKILL.md",
        &skill_text("machine-gpu", "Graphics cards, revised."),
    );
    let (changed, executed) = estate.recompose(&before);
    assert_eq!(changed, ["platform", "sysadmin"], "the two roles that use the hardware repository");
    // Not its `references/drivers.md`, not another repository's listing, not another
    // role's bundle, not `roles.kdl`, not any role's view, not the names of the skills.
    insta::assert_snapshot!(executed, @r"
    audited(example/hardware/.agents/skills/machine-gpu/SKILL.md)
    catalogue_listing(example/hardware)
    checked(example/hardware/.agents/skills/machine-gpu/SKILL.md)
    composition_bundle(platform)
    composition_bundle(sysadmin)
    parsed_document(example/hardware/.agents/skills/machine-gpu/SKILL.md)
    summary_of_bytes(example/hardware/.agents/skills/machine-gpu/SKILL.md)
    ");
}

#[test]
fn editing_one_summarized_skill_runs_no_per_file_query_only_its_repository_listing_and_its_roles_bundles() {
    let mut estate = Estate::composed(Held::Summaries);
    let before = estate.bundle_ids();
    estate.edit(
        "example/hardware/.agents/skills/machine-gpu/SKILL.md",
        &skill_text("machine-gpu", "Graphics cards, revised."),
    );
    let (changed, executed) = estate.recompose(&before);
    assert_eq!(changed, ["platform", "sysadmin"]);
    // The loader's summary is an input: nothing is parsed or hashed again.
    insta::assert_snapshot!(executed, @r"
    catalogue_listing(example/hardware)
    composition_bundle(platform)
    composition_bundle(sysadmin)
    ");
}

#[test]
fn editing_one_roles_block_in_roles_kdl_replans_admission_and_parses_no_skill() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    // The last role's block, so no other declaration moves (spans are part of a view).
    let edited = ESTATE_ROLES.replace("composed-skill \"metrics-*\"", "composed-skill \"metrics-board\"");
    assert_ne!(edited, ESTATE_ROLES);
    estate.edit(ROLES_FILE, &edited);
    let (changed, executed) = estate.recompose(&before);
    assert_eq!(changed, ["eval"], "the one role whose view changed");
    // Every role's view is taken again from the new root; only eval's differs, so only
    // eval re-plans. No skill file, catalogue listing or catalogue's names is read again.
    insta::assert_snapshot!(executed, @r"
    composition_bundle(eval)
    kdl_document(acme/root/.agents/roles.kdl)
    role_view(devrel)
    role_view(eval)
    role_view(frontend)
    role_view(gamedev)
    role_view(platform)
    role_view(sysadmin)
    role_view(tpm)
    trusted_root(acme/root/.agents/roles.kdl)
    ");
}

#[test]
fn appending_a_comment_to_roles_kdl_reparses_it_and_replans_no_role() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    estate.edit(ROLES_FILE, &format!("{ESTATE_ROLES}// The estate's roles.\n"));
    let (changed, executed) = estate.recompose(&before);
    assert!(changed.is_empty(), "{changed:?}");
    insta::assert_snapshot!(executed, @r"
    kdl_document(acme/root/.agents/roles.kdl)
    trusted_root(acme/root/.agents/roles.kdl)
    ");
}

#[test]
fn editing_a_skill_in_a_repository_no_role_admits_executes_no_query() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    // `archive` is declared and used by no role: every role lists it excluded, by the
    // names of its skills, which a body edit does not change.
    let archive = estate.catalogues[3];
    assert_eq!(archive.0, "example/archive");
    let digest = |estate: &Estate| catalogue_listing(&estate.db, archive.1).value.ordinary[0].digest.clone();
    let unedited = digest(&estate);
    estate.edit("example/archive/.agents/skills/old-notes/SKILL.md", &skill_text("old-notes", "Rewritten."));
    let (changed, executed) = estate.recompose(&before);
    assert!(changed.is_empty(), "{changed:?}");
    insta::assert_snapshot!(executed, @"");
    // The edit is there for whoever asks: the archive's listing, asked for, sees it.
    assert_ne!(digest(&estate), unedited);
}

#[test]
fn editing_a_skill_of_the_operating_context_root_replans_every_role_and_lists_only_the_root_again() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    // The root holds `roles.kdl` too, yet no role's view of it depends on a skill's bytes.
    estate.edit("acme/root/.agents/skills/estate-map/SKILL.md", &skill_text("estate-map", "Where things are now."));
    let (changed, executed) = estate.recompose(&before);
    assert_eq!(changed.len(), 7, "the root is every role's operating context: {changed:?}");
    insta::assert_snapshot!(executed, @r"
    audited(acme/root/.agents/skills/estate-map/SKILL.md)
    catalogue_listing(acme/root)
    checked(acme/root/.agents/skills/estate-map/SKILL.md)
    composition_bundle(devrel)
    composition_bundle(eval)
    composition_bundle(frontend)
    composition_bundle(gamedev)
    composition_bundle(platform)
    composition_bundle(sysadmin)
    composition_bundle(tpm)
    parsed_document(acme/root/.agents/skills/estate-map/SKILL.md)
    summary_of_bytes(acme/root/.agents/skills/estate-map/SKILL.md)
    ");
}

#[test]
fn editing_a_skill_the_selectors_leave_out_replans_the_roles_of_its_repository_into_the_same_bundles() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    // `compute-stack` is in the hardware repository but outside its `machine-*` slice:
    // selection reads the repository's whole listing, so the roles that use it resolve
    // again, and their bundles come out with the same content-addressed ids.
    estate.edit(
        "example/hardware/.agents/skills/compute-stack/SKILL.md",
        &skill_text("compute-stack", "The whole stack, revised."),
    );
    let (changed, executed) = estate.recompose(&before);
    assert!(changed.is_empty(), "{changed:?}");
    insta::assert_snapshot!(executed, @r"
    catalogue_listing(example/hardware)
    checked(example/hardware/.agents/skills/compute-stack/SKILL.md)
    composition_bundle(platform)
    composition_bundle(sysadmin)
    parsed_document(example/hardware/.agents/skills/compute-stack/SKILL.md)
    summary_of_bytes(example/hardware/.agents/skills/compute-stack/SKILL.md)
    ");
}

/// A private overlay over the estate: a skill exclusion for sysadmin, and an instruction
/// for platform and eval (last, so editing it moves no other entry: a selector's span is
/// part of a role's share).
const ESTATE_OVERLAY: &str = "exclude role=\"sysadmin\" skill=\"machine-gpu\"
instruction \"team-review\" {
    role \"platform\" \"eval\"
    text \"Reviews are written in English.\"
}
";

impl Estate {
    /// Gives every role's composition `overlays`, composes, and names the overlay queries.
    fn with_overlays(&mut self, overlays: &[SourceFile]) {
        for composition in self.compositions.values() {
            composition.set_overlays(&mut self.db).to(overlays.to_vec());
        }
        let person = self.compositions.values().next().expect("a role").person(&self.db);
        for overlay in overlays {
            let name = overlay.relative_path(&self.db).clone();
            kdl_document(&self.db, *overlay);
            self.learn(&name);
            acompose_engine::overlay::overlay_rules(&self.db, *overlay);
            self.learn(&name);
            acompose_engine::overlay::overlay_problems(&self.db, *overlay, person);
            self.learn(&name);
            for role in self.compositions.keys().cloned().collect::<Vec<_>>() {
                acompose_engine::overlay::role_overlay(&self.db, *overlay, role.clone());
                self.learn(&role);
            }
        }
        for (role, composition) in self.compositions.clone() {
            let _ = composition_bundle(&self.db, composition);
            self.learn(&role);
        }
    }
}

#[test]
fn an_overlay_changes_only_the_bundles_it_concerns_and_an_unconcerning_edit_replans_no_role() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    let overlay = SourceFile::new(
        &estate.db,
        "home/overlays".to_owned(),
        "team.kdl".to_owned(),
        ESTATE_OVERLAY.as_bytes().into(),
    );
    estate.with_overlays(&[overlay]);
    let (changed, _) = estate.recompose(&before);
    assert_eq!(changed, ["eval", "platform", "sysadmin"], "the three roles the overlay names");
    let with_overlay = estate.bundle_ids();

    // Unchanged: nothing runs, no id moves.
    let (changed, executed) = estate.recompose(&with_overlay);
    assert!(changed.is_empty() && executed.is_empty(), "{changed:?}\n{executed}");

    // A comment appended: the overlay is read again and its entries equal the last; no
    // role's share is taken again and no bundle is composed again.
    overlay.set_bytes(&mut estate.db).to(format!("{ESTATE_OVERLAY}// the team's overlay\n").into_bytes().into());
    let (changed, executed) = estate.recompose(&with_overlay);
    assert!(changed.is_empty(), "{changed:?}");
    insta::assert_snapshot!(executed, @r"
    audited(eval)
    kdl_document(team.kdl)
    overlay_rules(team.kdl)
    ");

    // A comment added above every entry: each entry moves down a line, so the roles it
    // concerns compose again, but no reason names a line and no bundle id moves.
    overlay.set_bytes(&mut estate.db).to(format!("// the team's overlay\n{ESTATE_OVERLAY}").into_bytes().into());
    let (changed, executed) = estate.recompose(&with_overlay);
    assert!(changed.is_empty(), "{changed:?}");
    assert!(executed.contains("composition_bundle(platform)"), "{executed}");

    // The instruction's text edited: only the two roles it names compose again.
    let edited = format!("// the team's overlay\n{ESTATE_OVERLAY}").replace("in English", "in plain English");
    overlay.set_bytes(&mut estate.db).to(edited.into_bytes().into());
    let (changed, executed) = estate.recompose(&with_overlay);
    assert_eq!(changed, ["eval", "platform"]);
    // Every role's share is taken again; only the two that changed compose again.
    insta::assert_snapshot!(executed, @r"
    audited(eval)
    composition_bundle(eval)
    composition_bundle(platform)
    kdl_document(team.kdl)
    overlay_problems(team.kdl)
    overlay_rules(team.kdl)
    role_overlay(devrel)
    role_overlay(eval)
    role_overlay(frontend)
    role_overlay(gamedev)
    role_overlay(platform)
    role_overlay(sysadmin)
    role_overlay(tpm)
    ");
}

const HARNESS_OVERLAY: &str = "instruction \"claude-hooks\" {
    role \"platform\"
    harness \"claude\"
    text \"Run the hooks.\"
}
instruction \"team-review\" {
    role \"eval\"
    text \"Reviews are written in English.\"
}
";

#[test]
fn an_edit_to_a_harness_scoped_instruction_changes_only_the_bundles_it_concerns() {
    let mut estate = Estate::composed(Held::Bytes);
    let before = estate.bundle_ids();
    let overlay = SourceFile::new(
        &estate.db,
        "home/overlays".to_owned(),
        "team.kdl".to_owned(),
        HARNESS_OVERLAY.as_bytes().into(),
    );
    estate.with_overlays(&[overlay]);
    let (changed, _) = estate.recompose(&before);
    assert_eq!(changed, ["eval", "platform"], "the two roles the overlay names");
    let with_overlay = estate.bundle_ids();

    // The harness-scoped text edited: platform's bundle alone composes again.
    let edited = HARNESS_OVERLAY.replace("Run the hooks.", "Run the hooks first.");
    overlay.set_bytes(&mut estate.db).to(edited.clone().into_bytes().into());
    let (changed, executed) = estate.recompose(&with_overlay);
    assert_eq!(changed, ["platform"]);
    assert!(
        executed.contains("composition_bundle(platform)") && !executed.contains("composition_bundle(eval)"),
        "{executed}"
    );
    let edited_ids = estate.bundle_ids();

    // Another harness named: platform again, and nothing else.
    let widened = edited.replace("harness \"claude\"", "harness \"claude\" \"codex\"");
    overlay.set_bytes(&mut estate.db).to(widened.into_bytes().into());
    let (changed, _) = estate.recompose(&edited_ids);
    assert_eq!(changed, ["platform"]);

    // Back to the first text: the first ids again.
    overlay.set_bytes(&mut estate.db).to(HARNESS_OVERLAY.as_bytes().into());
    let (changed, _) = estate.recompose(&with_overlay);
    assert!(changed.is_empty(), "{changed:?}");
}
