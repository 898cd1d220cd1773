// The acompose People page. Everything shown comes from /api/v1 and is set as text
// (textContent, attribute values): no value ever becomes markup. The token is taken from
// the address once, kept in this closure only, and removed from the address bar.
"use strict";
(() => {
  const TOKEN_PROTOCOL_PREFIX = "acompose.token.";
  const token = new URLSearchParams(window.location.search).get("token") || "";
  window.history.replaceState(null, "", window.location.pathname + window.location.hash);

  // Limits of person@1, enforced here for the user's benefit and again by the server.
  const SLUG = "[a-z0-9][a-z0-9_\\-]*";
  const REFERENCE = "[a-zA-Z0-9][a-zA-Z0-9._:\\/\\-]*";
  const MAX_LIST = 32;

  const view = () => document.getElementById("view");
  const statusLine = () => document.getElementById("status");

  // ---------------------------------------------------------------------------------
  // DOM building: children that are strings become text nodes.

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "text") node.textContent = String(value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function show(...nodes) {
    const target = view();
    target.replaceChildren(...nodes);
    const heading = target.querySelector("h2");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
    }
  }

  function say(message, keep) {
    statusLine().textContent = message;
    if (keep) statusLine().dataset.keep = "true";
  }

  // Shows a result and moves the reader (and keyboard focus) to its heading.
  function reveal(container, node) {
    container.replaceChildren(node);
    const heading = node.querySelector("h3");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
    }
    node.scrollIntoView({ block: "start" });
  }

  // ---------------------------------------------------------------------------------
  // The API.

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || "the request failed");
      this.status = status;
      this.body = body || {};
    }
  }

  async function api(method, path, body) {
    const headers = { Authorization: "Bearer " + token };
    const init = { method, headers, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    const response = await fetch("/api/v1" + path, init);
    let parsed = null;
    try {
      parsed = await response.json();
    } catch (_) {
      parsed = null;
    }
    if (!response.ok) throw new ApiError(response.status, parsed);
    return parsed;
  }

  function errorBox(error) {
    const body = error instanceof ApiError ? error.body : { code: "network", message: String(error.message || error) };
    const findings = Array.isArray(body.findings) ? body.findings : [];
    return el(
      "div",
      { class: "error", role: "alert" },
      el("p", {}, el("strong", {}, body.code || "error"), ": ", body.message || "the request failed"),
      body.pointer ? el("p", { class: "pointer" }, "at ", el("code", {}, body.pointer)) : null,
      findings.length
        ? el(
            "ul",
            {},
            findings.map((finding) =>
              el(
                "li",
                {},
                el("code", {}, finding.code),
                " ",
                finding.message,
                finding.line ? ` (line ${finding.line}${finding.column ? ", column " + finding.column : ""})` : "",
                finding.pointer ? el("span", { class: "pointer" }, " ", el("code", {}, finding.pointer)) : null,
              ),
            ),
          )
        : null,
    );
  }

  async function guarded(target, work) {
    try {
      await work();
    } catch (error) {
      target.replaceChildren(errorBox(error));
    }
  }

  // ---------------------------------------------------------------------------------
  // Roster.

  async function liveSessions() {
    try {
      const listing = await api("GET", "/sessions");
      return listing.sessions || [];
    } catch (_) {
      return [];
    }
  }

  function personCard(person, online) {
    const state = person.archived ? "archived" : online ? "online" : "offline";
    return el(
      "li",
      { class: "card", "data-person": person.id },
      el(
        "a",
        { href: "#/people/" + encodeURIComponent(person.id), class: "card-link" },
        el("span", { class: "avatar", "aria-hidden": "true" }, (person.name || "?").slice(0, 1).toUpperCase()),
        el("span", { class: "card-name" }, person.name),
      ),
      el("span", { class: "card-role" }, person.role),
      el("span", { class: "presence presence-" + state, "data-presence": state }, state),
    );
  }

  async function roster() {
    const target = el("div");
    show(el("h2", {}, "Roster"), target);
    await guarded(target, async () => {
      const [listing, sessions] = await Promise.all([api("GET", "/people"), liveSessions()]);
      const online = new Set(sessions.filter((session) => session.live).map((session) => session.person_id));
      const people = listing.people || [];
      const configured = people.filter((person) => !person.archived);
      const archived = people.filter((person) => person.archived);
      const density = el(
        "label",
        { class: "density" },
        el("input", {
          type: "checkbox",
          id: "compact",
          onchange: (event) => document.body.classList.toggle("compact", event.target.checked),
        }),
        " Compact list",
      );
      if (document.body.classList.contains("compact")) density.querySelector("input").checked = true;
      const problems = (listing.findings || []).length
        ? errorBox(new ApiError(200, { code: "unreadable-files", message: "some People files could not be read", findings: listing.findings }))
        : null;
      target.replaceChildren(
        ...[density, problems].filter(Boolean),
        el("h3", {}, `Configured (${configured.length})`),
        configured.length
          ? el("ul", { class: "cards", id: "configured" }, configured.map((person) => personCard(person, online.has(person.id))))
          : el("p", { class: "empty" }, "No configured People yet. Create one or import a hire file."),
        el("h3", {}, `Archived (${archived.length})`),
        archived.length
          ? el("ul", { class: "cards", id: "archived" }, archived.map((person) => personCard(person, false)))
          : el("p", { class: "empty" }, "Nothing archived."),
      );
    });
  }

  // ---------------------------------------------------------------------------------
  // A Person: detail, archive/restore.

  function field(label, value) {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) return null;
    return [el("dt", {}, label), el("dd", {}, Array.isArray(value) ? value.join(", ") : String(value))];
  }

  async function detail(id) {
    const target = el("div");
    show(el("h2", {}, "Person"), target);
    await guarded(target, async () => {
      const person = await api("GET", "/people/" + encodeURIComponent(id));
      const sessions = await liveSessions();
      const online = sessions.some((session) => session.live && session.person_id === person.id);
      const budget = person.budget || {};
      const toggle = person.archived
        ? el("button", { type: "button", id: "restore", onclick: () => setArchived(person.id, false) }, "Restore")
        : el("button", { type: "button", id: "archive", onclick: () => setArchived(person.id, true) }, "Archive");
      view().querySelector("h2").textContent = person.name;
      target.replaceChildren(
        el("p", {}, el("span", { class: "presence presence-" + (person.archived ? "archived" : online ? "online" : "offline"), id: "presence" }, person.archived ? "archived" : online ? "online" : "offline")),
        el(
          "dl",
          { class: "fields" },
          field("Id", person.id),
          field("Role", person.role),
          field("Goal", person.goal),
          field("Definition", person.definition_id),
          field("Preferred provider", person.preferred_provider),
          field("Preferred model", person.preferred_model),
          field("Capabilities", person.capabilities),
          field("Skills", person.skills),
          field("MCP servers", person.mcp_servers),
          field("Isolation", person.isolation),
          field("Max tokens", budget.max_tokens),
          field("Max cost (USD)", budget.max_cost_usd),
          field("Max seconds", budget.max_seconds),
          field("Imported from", person.import_source ? person.import_source.spec : null),
        ),
        el(
          "div",
          { class: "actions" },
          el("a", { class: "button", href: "#/people/" + encodeURIComponent(person.id) + "/edit", id: "edit" }, "Edit"),
          person.archived ? null : el("a", { class: "button", href: "#/start/" + encodeURIComponent(person.id), id: "start" }, "Start a session"),
          toggle,
        ),
        el("div", { id: "action-result" }),
      );
    });
  }

  async function setArchived(id, archived) {
    const result = document.getElementById("action-result");
    await guarded(result, async () => {
      await api("POST", "/people/" + encodeURIComponent(id) + (archived ? "/archive" : "/restore"));
      say(archived ? "Archived." : "Restored.");
      await detail(id);
    });
  }

  // ---------------------------------------------------------------------------------
  // The create / edit form.

  function input(name, label, attributes, value) {
    const id = "field-" + name;
    const { multiline, hint, ...rest } = attributes;
    const described = hint ? id + "-hint" : null;
    const control = multiline
      ? el("textarea", { id, name, rows: 4, "aria-describedby": described, ...rest })
      : el("input", { id, name, type: "text", "aria-describedby": described, ...rest });
    if (value !== undefined && value !== null) control.value = String(value);
    return el("div", { class: "field" }, el("label", { for: id }, label), control, hint ? el("small", { id: described }, hint) : null);
  }

  function listValue(text) {
    return text
      .split(/[\n,]/)
      .map((item) => item.trim())
      .filter((item) => item.length);
  }

  function personForm(person, isNew) {
    const budget = person.budget || {};
    const avatar = person.avatar || {};
    const form = el(
      "form",
      { id: "person-form", novalidate: false },
      input("id", "Id", { required: true, maxlength: 64, pattern: SLUG, readonly: isNew ? null : true, hint: "lowercase letters, digits, - and _" }, person.id),
      input("name", "Name", { required: true, maxlength: 128 }, person.name),
      input("role", "Role", { required: true, maxlength: 64, pattern: SLUG }, person.role),
      input("goal", "Goal", { required: true, maxlength: 2048, multiline: true }, person.goal),
      input("definition_id", "Definition id", { maxlength: 128, pattern: REFERENCE }, person.definition_id),
      input("preferred_provider", "Preferred provider", { maxlength: 128, pattern: REFERENCE }, person.preferred_provider),
      input("preferred_model", "Preferred model", { maxlength: 128, pattern: REFERENCE }, person.preferred_model),
      input("capabilities", "Capabilities", { multiline: true, hint: `one per line, at most ${MAX_LIST}` }, (person.capabilities || []).join("\n")),
      input("skills", "Skills", { multiline: true, hint: `one per line, at most ${MAX_LIST}` }, (person.skills || []).join("\n")),
      input("mcp_servers", "MCP servers", { multiline: true, hint: `one per line, at most ${MAX_LIST}` }, (person.mcp_servers || []).join("\n")),
      el(
        "div",
        { class: "field" },
        el("label", { for: "field-isolation" }, "Isolation"),
        el(
          "select",
          { id: "field-isolation", name: "isolation" },
          ["", "inherited", "worktree", "session"].map((value) =>
            el("option", { value, selected: (person.isolation || "") === value }, value || "(not set)"),
          ),
        ),
      ),
      input("max_tokens", "Max tokens", { type: "number", min: 0, max: 1000000000, step: 1 }, budget.max_tokens),
      input("max_cost_usd", "Max cost (USD)", { type: "number", min: 0, max: 1000000, step: "any" }, budget.max_cost_usd),
      input("max_seconds", "Max seconds", { type: "number", min: 0, max: 31536000, step: 1 }, budget.max_seconds),
      input("avatar_character", "Avatar character", { maxlength: 64, pattern: SLUG }, avatar.character),
      input("avatar_accent", "Avatar accent", { pattern: "#[0-9a-fA-F]{6}", hint: "#rrggbb" }, avatar.accent),
      el("div", { class: "actions" }, el("button", { type: "submit", id: "save" }, isNew ? "Create" : "Save")),
      el("div", { id: "form-result" }),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const result = document.getElementById("form-result");
      if (!form.reportValidity()) return;
      const document_ = documentFrom(form, person);
      const tooLong = ["capabilities", "skills", "mcp_servers"].find((key) => (document_[key] || []).length > MAX_LIST);
      if (tooLong) {
        result.replaceChildren(errorBox(new ApiError(0, { code: "too-many-items", message: `at most ${MAX_LIST} items`, pointer: "/properties/" + tooLong + "/maxItems" })));
        return;
      }
      await guarded(result, async () => {
        const saved = isNew
          ? await api("POST", "/people", document_)
          : await api("PUT", "/people/" + encodeURIComponent(person.id), document_);
        say(isNew ? "Created." : "Saved.", true);
        window.location.hash = "#/people/" + encodeURIComponent(saved.id);
      });
    });
    return form;
  }

  // A person@1 document from the form, keeping what the form does not edit (archived,
  // import provenance) from the stored Person.
  function documentFrom(form, person) {
    const value = (name) => form.elements[name].value.trim();
    const number = (name) => (value(name) === "" ? undefined : Number(value(name)));
    const document_ = {
      spec: "agent-toolkit/person@1",
      id: value("id"),
      name: value("name"),
      role: value("role"),
      goal: form.elements.goal.value.trim(),
      archived: Boolean(person.archived),
    };
    for (const key of ["definition_id", "preferred_provider", "preferred_model"]) if (value(key)) document_[key] = value(key);
    for (const key of ["capabilities", "skills", "mcp_servers"]) {
      const items = listValue(form.elements[key].value);
      if (items.length) document_[key] = items;
    }
    if (value("avatar_character") || value("avatar_accent")) {
      document_.avatar = { character: value("avatar_character"), accent: value("avatar_accent") };
    }
    if (value("isolation")) document_.isolation = value("isolation");
    const budget = {};
    for (const key of ["max_tokens", "max_cost_usd", "max_seconds"]) if (number(key) !== undefined) budget[key] = number(key);
    if (Object.keys(budget).length) document_.budget = budget;
    if (person.import_source) document_.import_source = person.import_source;
    return document_;
  }

  async function edit(id) {
    const target = el("div");
    show(el("h2", {}, "Edit Person"), target);
    await guarded(target, async () => {
      const person = await api("GET", "/people/" + encodeURIComponent(id));
      target.replaceChildren(personForm(person, false));
    });
  }

  function create() {
    show(el("h2", {}, "New Person"), personForm({}, true));
  }

  // ---------------------------------------------------------------------------------
  // The reviewed import: nothing is written before Save.

  function importView() {
    const result = el("div", { id: "import-result" });
    let upload = null;
    const overrides = el(
      "fieldset",
      {},
      el("legend", {}, "Answers for the review (optional)"),
      input("import_id", "Id", { maxlength: 64, pattern: SLUG }),
      input("import_name", "Name", { maxlength: 128 }),
      input("import_role", "Role", { maxlength: 64, pattern: SLUG }),
      input("import_goal", "Goal", { maxlength: 2048, multiline: true }),
      input("import_max_tokens", "Max tokens", { type: "number", min: 0, max: 1000000000, step: 1 }),
    );
    const form = el(
      "form",
      { id: "import-form" },
      el(
        "div",
        { class: "field" },
        el("label", { for: "hire-file" }, "Hire file (hire@1, JSON)"),
        el("input", { type: "file", id: "hire-file", accept: ".json,application/json", required: true }),
      ),
      overrides,
      el("div", { class: "actions" }, el("button", { type: "submit", id: "review" }, "Review")),
    );
    const request = (content) => {
      const body = { file_name: upload.name, content };
      const value = (name) => form.elements[name].value.trim();
      if (value("import_id")) body.id = value("import_id");
      if (value("import_name")) body.name = value("import_name");
      if (value("import_role")) body.role = value("import_role");
      if (value("import_goal")) body.goal = value("import_goal");
      if (value("import_max_tokens")) body.max_tokens = Number(value("import_max_tokens"));
      return body;
    };
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const file = document.getElementById("hire-file").files[0];
      if (!file) return;
      upload = { name: file.name, content: await file.text() };
      await guarded(result, async () => {
        const review = await api("POST", "/people/import", request(upload.content));
        reveal(result, reviewTable(review, async () => {
          await guarded(result, async () => {
            const saved = await api("POST", "/people/import/save", request(upload.content));
            say("Imported as " + saved.person_id + ".", true);
            window.location.hash = "#/people/" + encodeURIComponent(saved.person_id);
          });
        }));
      });
    });
    show(el("h2", {}, "Import a hire file"), el("p", {}, "The file is reviewed first; nothing is written until you press Save."), form, result);
  }

  function reviewTable(review, save) {
    return el(
      "section",
      { "aria-labelledby": "review-heading", id: "import-review" },
      el("h3", { id: "review-heading" }, "Review of ", review.file),
      el("h4", {}, "Mapped fields"),
      el(
        "table",
        { id: "mapped" },
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "From"), el("th", { scope: "col" }, "To"), el("th", { scope: "col" }, "Value"))),
        el(
          "tbody",
          {},
          (review.mapped || []).map((row) =>
            el("tr", {}, el("td", {}, el("code", {}, row.source)), el("td", {}, el("code", {}, row.target)), el("td", {}, row.value, row.note ? el("small", {}, " — ", row.note) : null)),
          ),
        ),
      ),
      el("h4", {}, "Ignored fields"),
      (review.ignored || []).length
        ? el("ul", { id: "ignored" }, review.ignored.map((item) => el("li", {}, el("code", {}, item.name), " — ", item.reason)))
        : el("p", { id: "ignored" }, "None."),
      (review.needs_review || []).length
        ? [el("h4", {}, "Needs your answer"), el("ul", { id: "needs-review" }, review.needs_review.map((item) => el("li", { class: item.blocking ? "blocking" : "" }, el("code", {}, item.field), " — ", item.message, item.blocking ? " (blocks saving)" : "")))]
        : null,
      el(
        "div",
        { class: "actions" },
        el("button", { type: "button", id: "save-import", disabled: !review.ready_to_save, onclick: save }, "Save"),
        review.ready_to_save ? null : el("span", {}, " Answer the blocking items above, then Review again."),
      ),
    );
  }

  // ---------------------------------------------------------------------------------
  // The swarm view: a recipe's roles, a Person per role, the preview, Remember / Clear.

  function swarmView() {
    const result = el("div", { id: "swarm-result" });
    const form = el(
      "form",
      { id: "swarm-form" },
      el("div", { class: "field" }, el("label", { for: "recipe-file" }, "Recipe file (.json, .yaml)"), el("input", { type: "file", id: "recipe-file", accept: ".json,.yaml,.yml", required: true })),
      el("div", { class: "actions" }, el("button", { type: "submit", id: "preview" }, "Preview")),
    );
    let recipe = null;
    const preview = async (assignments) => {
      await guarded(result, async () => {
        const [resolution, people, bindings] = await Promise.all([
          api("POST", "/people/resolve", { recipe_file_name: recipe.name, recipe: recipe.content, assignments }),
          api("GET", "/people"),
          api("GET", "/people/bindings"),
        ]);
        result.replaceChildren(swarmTable(resolution, people.people || [], bindings.bindings, assignments, preview, result));
        if (window.acomposeSwarm) result.append(window.acomposeSwarm.startForm(recipe, assignments));
      });
    };
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const file = document.getElementById("recipe-file").files[0];
      if (!file) return;
      recipe = { name: file.name, content: await file.text() };
      await preview([]);
    });
    show(el("h2", {}, "Swarm"), el("p", {}, "Choose a Person per role, preview who fills each one, then review and start the run."), form, result);
  }

  function swarmTable(resolution, people, bindings, assignments, preview, result) {
    const active = people.filter((person) => !person.archived);
    const chosen = new Map(assignments.map((assignment) => [assignment.role, assignment.person_id]));
    const rows = (resolution.roles || []).map((role) => {
      const selectId = "assign-" + role.role;
      const select = el(
        "select",
        { id: selectId, "data-role": role.role },
        el("option", { value: "" }, "(resolve)"),
        active.map((person) => el("option", { value: person.id, selected: chosen.get(role.role) === person.id }, person.name + " (" + person.id + ")")),
      );
      select.addEventListener("change", () => {
        const next = new Map(chosen);
        if (select.value) next.set(role.role, select.value);
        else next.delete(role.role);
        preview([...next].map(([name, person_id]) => ({ role: name, person_id })));
      });
      const pinned = bindings && bindings.roles && bindings.roles[role.role] && bindings.roles[role.role].person_id;
      return el(
        "tr",
        { "data-role": role.role },
        el("th", { scope: "row" }, role.role, role.persona ? el("small", {}, " ", role.persona) : null),
        el("td", {}, el("label", { for: selectId, class: "visually-hidden" }, "Person for " + role.role), select),
        el("td", { class: "resolved" }, role.person_id || "(nobody)"),
        el("td", {}, el("code", {}, role.rule), role.skipped && role.skipped.length ? el("small", {}, ` (${role.skipped.length} skipped)`) : null),
        el(
          "td",
          {},
          el("button", { type: "button", class: "remember", disabled: !role.person_id, onclick: () => pin(role.role, role.person_id, bindings, preview, assignments, result) }, "Remember"),
          " ",
          el("button", { type: "button", class: "clear", disabled: !pinned, onclick: () => pin(role.role, null, bindings, preview, assignments, result) }, "Clear"),
          pinned ? el("small", { class: "pinned" }, " pinned: ", pinned) : null,
        ),
      );
    });
    return el(
      "table",
      { id: "swarm" },
      el("caption", {}, "Roles of ", resolution.recipe),
      el("thead", {}, el("tr", {}, ["Role", "Assign", "Resolved", "Rule", "Binding"].map((name) => el("th", { scope: "col" }, name)))),
      el("tbody", {}, rows),
    );
  }

  async function pin(role, personId, bindings, preview, assignments, result) {
    const roles = JSON.parse(JSON.stringify((bindings && bindings.roles) || {}));
    const current = roles[role] || {};
    const next = {};
    if (personId) next.person_id = personId;
    if (current.preferred_people && current.preferred_people.length) next.preferred_people = current.preferred_people;
    roles[role] = next;
    for (const [name, binding] of Object.entries(roles)) {
      if (binding.person_id === null || binding.person_id === undefined) delete binding.person_id;
      if (!binding.preferred_people || !binding.preferred_people.length) delete binding.preferred_people;
      if (!Object.keys(binding).length) delete roles[name];
    }
    await guarded(result, async () => {
      await api("PUT", "/people/bindings", { spec: "agent-toolkit/people-bindings@1", roles });
      say(personId ? "Remembered " + personId + " for " + role + "." : "Cleared the pin of " + role + ".");
      await preview(assignments);
    });
  }

  // ---------------------------------------------------------------------------------
  // The start review and sessions.

  async function startView(personId) {
    const target = el("div");
    show(el("h2", {}, "Start a session"), target);
    await guarded(target, async () => {
      const [person, projects, runners] = await Promise.all([
        api("GET", "/people/" + encodeURIComponent(personId)),
        api("GET", "/projects"),
        api("GET", "/runners"),
      ]);
      const available = (runners.runners || []).filter((runner) => runner.available);
      const reviewBox = el("div", { id: "start-review" });
      const form = el(
        "form",
        { id: "start-form" },
        el("p", {}, "For ", el("strong", {}, person.name), " (", person.role, ")."),
        el("div", { class: "field" }, el("label", { for: "start-project" }, "Project"), el("select", { id: "start-project", required: true }, (projects.projects || []).map((project) => el("option", { value: project.id }, project.id)))),
        el("div", { class: "field" }, el("label", { for: "start-runner" }, "Runner"), el("select", { id: "start-runner", required: true }, available.map((runner) => el("option", { value: runner.name }, runner.name + " (" + runner.binary + ")")))),
        input("start_model", "Model (optional)", { maxlength: 128, pattern: REFERENCE }),
        input("start_task", "Task for this session (used once, stored nowhere)", { multiline: true, maxlength: 8192 }, person.goal),
        el("div", { class: "actions" }, el("button", { type: "submit", id: "review-start" }, "Review")),
      );
      if (!(projects.projects || []).length) form.prepend(el("p", { class: "error" }, "No projects: link one as projects/<id> in the workspace."));
      if (!available.length) form.prepend(el("p", { class: "error" }, "No runner was found on PATH."));
      const request = () => {
        const body = { person_id: person.id, project_id: form.querySelector("#start-project").value, runner: form.querySelector("#start-runner").value };
        const model = form.elements.start_model.value.trim();
        const task = form.elements.start_task.value;
        if (model) body.model = model;
        if (task.trim()) body.task = task;
        return body;
      };
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        if (!form.reportValidity()) return;
        await guarded(reviewBox, async () => {
          const review = await api("POST", "/sessions/review", request());
          reveal(reviewBox, startReview(review, request));
        });
      });
      target.replaceChildren(form, reviewBox);
    });
  }

  function startReview(review, request) {
    const unsupported = review.unsupported_details || [];
    const acknowledge = unsupported.length
      ? el("div", { class: "field" }, el("label", { for: "acknowledge" }, el("input", { type: "checkbox", id: "acknowledge" }), " Start anyway: these limits are not enforced"))
      : null;
    const result = el("div", { id: "start-result" });
    return el(
      "section",
      { "aria-labelledby": "start-review-heading" },
      el("h3", { id: "start-review-heading" }, "Review"),
      el("dl", { class: "fields" }, field("Folder", review.cwd), field("Runner", review.runner), field("Model", review.model), field("Command", review.command_line)),
      el("h4", {}, "Prompt"),
      el("pre", { id: "prompt-preview", tabindex: "0" }, review.prompt),
      unsupported.length ? el("ul", { id: "unsupported" }, unsupported.map((limit) => el("li", {}, el("code", {}, limit.field), " — ", limit.explanation))) : null,
      acknowledge,
      el(
        "div",
        { class: "actions" },
        el(
          "button",
          {
            type: "button",
            id: "start-now",
            onclick: async () => {
              const body = request();
              body.acknowledge_unsupported = Boolean(acknowledge && acknowledge.querySelector("input").checked);
              await guarded(result, async () => {
                const session = await api("POST", "/sessions", body);
                window.location.hash = "#/sessions/" + encodeURIComponent(session.id);
              });
            },
          },
          "Start",
        ),
      ),
      result,
    );
  }

  async function sessionsView() {
    const target = el("div");
    show(el("h2", {}, "Sessions"), target);
    await guarded(target, async () => {
      const listing = await api("GET", "/sessions");
      const sessions = listing.sessions || [];
      target.replaceChildren(
        sessions.length
          ? el(
              "table",
              { id: "sessions" },
              el("thead", {}, el("tr", {}, ["Session", "Person", "Project", "Runner", "Status", "Started"].map((name) => el("th", { scope: "col" }, name)))),
              el(
                "tbody",
                {},
                sessions.map((session) =>
                  el(
                    "tr",
                    { "data-session": session.id },
                    el("td", {}, el("a", { href: "#/sessions/" + encodeURIComponent(session.id) }, session.id)),
                    el("td", {}, session.person),
                    el("td", {}, session.project_id),
                    el("td", {}, session.provider),
                    el("td", { class: "session-status" }, session.status, session.live ? " (live)" : ""),
                    el("td", {}, session.started_at),
                  ),
                ),
              ),
            )
          : el("p", { class: "empty" }, "No sessions yet."),
      );
    });
  }

  let openSocket = null;

  async function sessionView(id) {
    const target = el("div");
    show(el("h2", {}, "Session"), target);
    await guarded(target, async () => {
      const session = await api("GET", "/sessions/" + encodeURIComponent(id));
      const statusText = el("span", { id: "session-status" }, session.status);
      const screen = el("div", { id: "terminal", class: "terminal", role: "region", "aria-label": "Terminal of the session" });
      const stop = el("button", { type: "button", id: "stop", disabled: !session.live, onclick: async () => {
        await guarded(result, async () => {
          const stopped = await api("POST", "/sessions/" + encodeURIComponent(id) + "/stop");
          statusText.textContent = stopped.status;
          stop.disabled = true;
          say("Stopped.");
        });
      } }, "Stop");
      const result = el("div");
      target.replaceChildren(
        el("p", {}, el("strong", {}, session.person), " — ", session.project_id, " — ", session.provider, " — status ", statusText),
        el("div", { class: "actions" }, stop, el("a", { class: "button", href: "#/people/" + encodeURIComponent(session.person_id) }, "Person"), window.acomposeSwarm ? window.acomposeSwarm.sessionActions(session, result) : null),
        screen,
        result,
      );
      if (session.attachable) attachTerminal(id, screen, statusText, stop);
      else if (session.live) screen.append(el("p", { class: "empty" }, "This session runs in the terminal that started it; only Stop is available here."));
      else screen.append(el("p", { class: "empty" }, "The session has ended; its terminal is closed."));
    });
  }

  function attachTerminal(id, screen, statusText, stop) {
    const terminal = new window.Terminal({ convertEol: false, cursorBlink: true, fontSize: 14, scrollback: 5000 });
    const fit = new window.FitAddon.FitAddon();
    terminal.loadAddon(fit);
    terminal.open(screen);
    fit.fit();
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${window.location.host}/api/v1/sessions/${encodeURIComponent(id)}/terminal`, [TOKEN_PROTOCOL_PREFIX + token]);
    socket.binaryType = "arraybuffer";
    openSocket = socket;
    const send = (message) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(message));
    socket.addEventListener("open", () => send({ type: "resize", cols: terminal.cols, rows: terminal.rows }));
    socket.addEventListener("message", (event) => {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.type === "exit") {
          statusText.textContent = message.status;
          stop.disabled = true;
        }
      } else {
        terminal.write(new Uint8Array(event.data));
      }
    });
    socket.addEventListener("close", () => {
      stop.disabled = true;
      screen.dataset.closed = "true";
    });
    terminal.onData((data) => send({ type: "input", data }));
    terminal.onResize(({ cols, rows }) => send({ type: "resize", cols, rows }));
    window.addEventListener("resize", () => fit.fit());
  }

  // ---------------------------------------------------------------------------------
  // Routing by the address's fragment.

  let lastSection = null;

  function navigate() {
    const sectionNow = window.location.hash;
    // A message belongs to the screen it was said on; it survives only the redirect
    // that follows a save.
    if (lastSection !== null && !statusLine().dataset.keep) statusLine().textContent = "";
    delete statusLine().dataset.keep;
    lastSection = sectionNow;
    if (openSocket) {
      openSocket.close();
      openSocket = null;
    }
    const parts = (window.location.hash.replace(/^#\/?/, "") || "people").split("/").map(decodeURIComponent);
    const section = parts[0];
    for (const link of document.querySelectorAll("[data-nav]")) {
      const current = link.dataset.nav === (section === "people" && parts[1] === "new" ? "new" : section === "start" ? "people" : section);
      if (current) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (!token) {
      show(el("h2", {}, "Token needed"), el("p", {}, "Open the address that `acompose serve` printed; it carries the token this page needs."));
      return;
    }
    if (section === "people" && parts[1] === "new") return create();
    if (section === "people" && parts[1] && parts[2] === "edit") return edit(parts[1]);
    if (section === "people" && parts[1]) return detail(parts[1]);
    if (section === "import") return importView();
    if (section === "swarm") return swarmView();
    if (section === "runs" && window.acomposeSwarm) return window.acomposeSwarm.route(parts);
    if (section === "start" && parts[1]) return startView(parts[1]);
    if (section === "sessions" && parts[1]) return sessionView(parts[1]);
    if (section === "sessions") return sessionsView();
    return roster();
  }

  // The helpers swarm.js builds its views with (swarm runs, resume).
  window.acompose = { api, el, show, say, guarded, reveal, field, errorBox };

  window.addEventListener("hashchange", navigate);
  window.addEventListener("DOMContentLoaded", navigate);
})();
