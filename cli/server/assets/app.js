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
  // The settled signal: <html data-state> is "busy" while a view renders, a request is
  // out, a handler runs, the events socket connects or a navigation is on its way, and
  // "settled" once all of them are done. It turns "settled" on a later task, so the code
  // that awaited the last answer has drawn it first. The browser suite waits on it.

  let pending = 0;
  let heldNavigations = 0;

  function busy() {
    pending += 1;
    document.documentElement.dataset.state = "busy";
  }

  function done() {
    window.setTimeout(() => {
      pending -= 1;
      if (pending > 0) return;
      document.documentElement.dataset.state = "settled";
      // The first time the page settles, for the measure of a first load.
      if (!performance.getEntriesByName("acompose-first-settled").length) performance.mark("acompose-first-settled");
    }, 0);
  }

  // `work` (a handler or a render) counted as busy until it and what it awaits finish.
  function tracked(work) {
    return function (...args) {
      busy();
      let outcome;
      try {
        outcome = work.apply(this, args);
      } catch (error) {
        done();
        throw error;
      }
      Promise.resolve(outcome).then(done, done);
      return outcome;
    };
  }

  // Goes to another view; busy from now until that view is drawn.
  function go(hash) {
    if (window.location.hash === hash) return;
    busy();
    heldNavigations += 1;
    window.location.hash = hash;
  }

  // ---------------------------------------------------------------------------------
  // DOM building: children that are strings become text nodes.

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), tracked(value));
      else if (key === "text") node.textContent = String(value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // While a view redraws itself for a change pushed by the server, focus stays put.
  let refreshing = false;

  function show(...nodes) {
    const target = view();
    target.replaceChildren(...nodes);
    const heading = target.querySelector("h2");
    if (heading && !refreshing) {
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
    // `action`: what the refused request was for, in the page's words ("saved", "read",
    // "reviewed", "started", "stopped"), for the headline of its findings.
    constructor(status, body, action) {
      super((body && body.message) || "the request failed");
      this.status = status;
      this.body = body || {};
      this.action = action || "read";
    }
  }

  function actionOf(method, path) {
    if (method === "GET") return "read";
    if (/\/(review|resolve)$|^\/people\/import$/.test(path)) return "reviewed";
    if (/\/stop$/.test(path)) return "stopped";
    if (/^\/(sessions|swarm)$|\/resume$/.test(path)) return "started";
    return "saved";
  }

  // One request; `version` (the ETag of the read an edit started from) goes in
  // If-Match. Returns the parsed body and the version the answer carries.
  async function call(method, path, body, version) {
    busy();
    try {
      return await request(method, path, body, version);
    } finally {
      done();
    }
  }

  async function request(method, path, body, version) {
    const headers = { Authorization: "Bearer " + token };
    if (version) headers["If-Match"] = '"' + version + '"';
    const init = { method, headers, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch("/api/v1" + path, init);
    } catch (error) {
      connectionLost();
      throw error;
    }
    let parsed = null;
    try {
      parsed = await response.json();
    } catch (_) {
      parsed = null;
    }
    if (!response.ok) throw new ApiError(response.status, parsed, actionOf(method, path));
    const etag = response.headers.get("ETag");
    return { body: parsed, version: etag ? etag.replace(/^W\//, "").replace(/"/g, "") : null };
  }

  async function api(method, path, body, version) {
    return (await call(method, path, body, version)).body;
  }

  // How the page names each field of a Person, a hire file and a session, so a finding
  // speaks of what the reader sees on the form rather than of schema paths.
  const FIELD_LABELS = {
    spec: "Format",
    id: "Id",
    name: "Name",
    role: "Role",
    goal: "Goal",
    archived: "Archived",
    definition_id: "Definition id",
    preferred_provider: "Preferred provider",
    preferred_model: "Preferred model",
    capabilities: "Capabilities",
    skills: "Skills",
    mcp_servers: "MCP servers",
    isolation: "Isolation",
    avatar: "Avatar",
    "avatar.character": "Avatar character",
    "avatar.accent": "Avatar accent",
    budget: "Budget",
    "budget.max_tokens": "Max tokens",
    "budget.max_cost_usd": "Max cost (USD)",
    "budget.max_seconds": "Max seconds",
    import_source: "Imported from",
    "import_source.spec": "Imported from",
    "import_source.id": "Original id (kept with the import)",
    "import_source.original_character": "Original avatar (kept with the import)",
    "import_source.original_accent": "Original accent (kept with the import)",
    roles: "Roles",
    person_id: "Person",
    preferred_people: "Fallbacks",
    "--id": "Id",
    "--name": "Name",
    "--role": "Role",
    "--goal": "Goal",
    "--max-tokens": "Max tokens",
    tokenCap: "tokenCap",
  };

  // The field a finding is about: its `field`, else the properties its schema pointer
  // walks through (`/properties/budget/properties/max_tokens/maximum` is budget.max_tokens).
  function fieldOf(finding) {
    if (finding.field) return finding.field;
    const pointer = finding.pointer || "";
    const names = [];
    const parts = pointer.split("/");
    for (let index = 0; index < parts.length - 1; index += 1) {
      if (parts[index] === "properties") names.push(parts[index + 1]);
    }
    return names.join(".");
  }

  function labelOf(field) {
    return FIELD_LABELS[field] || field;
  }

  // A cli hint in the page's own terms: `--max-tokens` is the Max tokens box.
  function inPageTerms(text) {
    return String(text || "")
      .replace(/(pass|override with|supply one with|review must supply one with) (--[a-z-]+)/g, (_, __, flag) => `fill in “${labelOf(flag)}”`)
      .replace(/`?acompose people edit [a-z0-9_-]+`?/g, "Edit on the Person's page")
      .replace(/start again with --acknowledge-unsupported/g, "tick “Start anyway” in the review and start again");
  }

  // One finding as a sentence: where (the file, the field as the form labels it), what,
  // and the fix; the code, line and pointer go to a details line.
  function findingItem(finding) {
    const field = fieldOf(finding);
    const where = [];
    if (finding.file) where.push("In " + finding.file);
    if (field) where.push((where.length ? ", “" : "“") + labelOf(field) + "”");
    const sentence = (where.length ? where.join("") + ": " : "") + inPageTerms(finding.message) + ".";
    const details = [finding.code, finding.line ? `line ${finding.line}${finding.column ? ", column " + finding.column : ""}` : "", finding.pointer || ""].filter(Boolean).join(" · ");
    return el(
      "li",
      { "data-code": finding.code },
      el("span", { class: "sentence" }, sentence.replace(/\.\.$/, ".")),
      finding.hint ? el("span", { class: "fix" }, " " + capitalise(inPageTerms(finding.hint)) + ".") : null,
      el("small", { class: "details" }, details),
    );
  }

  function capitalise(text) {
    return text ? text[0].toUpperCase() + text.slice(1) : text;
  }

  function errorBox(error) {
    const body = error instanceof ApiError ? error.body : { code: "network", message: "the server could not be reached (" + String(error.message || error) + ")" };
    const findings = Array.isArray(body.findings) ? body.findings : [];
    const action = error instanceof ApiError ? error.action : "read";
    const field = body.pointer ? fieldOf({ pointer: body.pointer }) || body.pointer.replace(/^\//, "") : "";
    const headline = findings.length
      ? findings.length === 1 ? `This could not be ${action}: one thing needs fixing.` : `This could not be ${action}: ${findings.length} things need fixing.`
      : capitalise((field ? "“" + labelOf(field) + "”: " : "") + inPageTerms(body.message || "the request failed")) + ".";
    return el(
      "div",
      { class: "error", role: "alert", "data-code": body.code || "error" },
      el("p", { class: "sentence" }, headline.replace(/\.\.$/, ".")),
      findings.length ? el("ul", {}, findings.map(findingItem)) : null,
      el("small", { class: "details" }, [body.code || "error", body.pointer || ""].filter(Boolean).join(" · ")),
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
  // Role colours: the roster's roles (from /api/v1/home) give each role its favourite
  // colour; a Person's avatar accent, when set, colours its avatar. Read once per screen.

  async function homeOverview() {
    try {
      return await api("GET", "/home");
    } catch (_) {
      return { roles: [], bundles: [] };
    }
  }

  function rolesByName(home) {
    return new Map((home.roles || []).map((role) => [role.role, role]));
  }

  // The colours a Person is shown in: its role's colour (the card's edge) and its avatar
  // accent (the avatar's ring), each falling back on the other.
  function personColours(person, roles) {
    const role = roles.get(person.role);
    const accent = person.avatar && person.avatar.accent ? person.avatar.accent : null;
    return { role: safeColour(role ? role.favorite_color : accent), accent: safeColour(accent || (role ? role.favorite_color : null)) };
  }

  // A role's colour as a small swatch, when the role is the roster's.
  function roleSwatch(roles, role) {
    const known = roles.get(role);
    return known ? swatch(known.favorite_color, role + " colour") : null;
  }

  function avatarOf(name, colours) {
    const badge = el("span", { class: "avatar", "aria-hidden": "true" }, String(name || "?").slice(0, 1).toUpperCase());
    badge.style.borderColor = colours.accent;
    return badge;
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

  function personCard(person, online, roles) {
    const state = person.archived ? "archived" : online ? "online" : "offline";
    const colours = personColours(person, roles || new Map());
    return el(
      "li",
      { class: "card person-card", "data-person": person.id, "data-role": person.role, "data-presence": state, style: "--role-colour: " + colours.role },
      el(
        "a",
        { href: "#/people/" + encodeURIComponent(person.id), class: "card-link", title: person.name + " (id " + person.id + ")" },
        avatarOf(person.name, colours),
        el("span", { class: "card-name" }, person.name),
      ),
      el("span", { class: "card-role" }, person.role),
      el("span", { class: "presence presence-" + state, "data-presence": state }, state),
    );
  }

  // How the roster is looked at (search, filters, grouping, density), kept while the
  // page is open; `compact: null` means "by the roster's size".
  const rosterView = { search: "", role: "", status: "", group: false, compact: null };
  const COMPACT_ABOVE = 20;

  async function roster() {
    const mine = generation;
    const target = el("div");
    show(el("h2", {}, "Roster"), target);
    follow(() => redraw(roster), mine);
    await guarded(target, async () => {
      const [listing, sessions, home] = await Promise.all([api("GET", "/people"), liveSessions(), homeOverview()]);
      const online = new Set(sessions.filter((session) => session.live).map((session) => session.person_id));
      const people = listing.people || [];
      const roles = rolesByName(home);
      document.body.classList.toggle("compact", rosterView.compact === null ? people.length > COMPACT_ABOVE : rosterView.compact);
      const results = el("div", { id: "roster-results" });
      const draw = () => results.replaceChildren(...rosterLists(people, online, roles));
      const problems = (listing.findings || []).length
        ? errorBox(new ApiError(200, { code: "unreadable-files", message: "some People files could not be read", findings: listing.findings }))
        : null;
      target.replaceChildren(...[rosterControls(people, draw), problems, results].filter(Boolean));
      draw();
    });
  }

  // Find, filter by role and status, group by role, and the density of the list.
  function rosterControls(people, draw) {
    const change = (key, value) => {
      rosterView[key] = value;
      draw();
    };
    const known = [...new Set(people.map((person) => person.role))].sort();
    const choice = (id, label, key, options) =>
      el("div", { class: "field" }, el("label", { for: id }, label), el("select", { id, onchange: (event) => change(key, event.target.value) }, options.map(([value, text]) => el("option", { value, selected: rosterView[key] === value }, text))));
    const box = (id, label, checked, onchange) => el("label", { class: "choice" }, el("input", { type: "checkbox", id, checked, onchange }), " ", label);
    return el(
      "div",
      { class: "roster-controls", role: "search" },
      el("div", { class: "field grow" }, el("label", { for: "roster-search" }, "Find"), el("input", { type: "search", id: "roster-search", value: rosterView.search, placeholder: "name, id or role", oninput: (event) => change("search", event.target.value) })),
      choice("roster-role", "Role", "role", [["", "All roles"], ...known.map((role) => [role, role])]),
      choice("roster-status", "Status", "status", [["", "Any status"], ["online", "Online"], ["offline", "Offline"], ["archived", "Archived"]]),
      el(
        "div",
        { class: "field" },
        box("roster-group", "Group by role", rosterView.group, (event) => change("group", event.target.checked)),
        box("compact", "Compact list", document.body.classList.contains("compact"), (event) => {
          rosterView.compact = event.target.checked;
          document.body.classList.toggle("compact", event.target.checked);
        }),
      ),
    );
  }

  // The People the controls let through, configured then archived, grouped by role
  // when asked, with how many are shown.
  function rosterLists(people, online, roles) {
    const needle = rosterView.search.trim().toLowerCase();
    const stateOf = (person) => (person.archived ? "archived" : online.has(person.id) ? "online" : "offline");
    const shown = people.filter(
      (person) =>
        (!needle || [person.name, person.id, person.role].some((text) => String(text || "").toLowerCase().includes(needle))) &&
        (!rosterView.role || person.role === rosterView.role) &&
        (!rosterView.status || stateOf(person) === rosterView.status),
    );
    const configured = shown.filter((person) => !person.archived);
    const archived = shown.filter((person) => person.archived);
    const list = (id, group) => el("ul", { class: "cards", id }, group.map((person) => personCard(person, online.has(person.id), roles)));
    const grouped = () =>
      [...new Set(configured.map((person) => person.role))].sort().map((role) => {
        const members = configured.filter((person) => person.role === role);
        const known = roles.get(role);
        return el("section", { class: "role-group", "data-role": role }, el("h4", {}, known ? swatch(known.favorite_color, "role colour") : null, " ", known && known.display_name ? known.display_name + " (" + role + ")" : role, " · ", String(members.length)), list(null, members));
      });
    const filtered = shown.length !== people.length;
    return [
      el("p", { id: "roster-count", class: "note", role: "status" }, filtered ? `Showing ${shown.length} of ${people.length} People.` : `${people.length} People.`),
      el("h3", {}, `Configured (${configured.length})`),
      configured.length
        ? rosterView.group
          ? el("div", { id: "configured" }, grouped())
          : list("configured", configured)
        : el("p", { class: "empty" }, filtered ? "Nobody configured matches." : "No configured People yet. Create one or import a hire file."),
      el("h3", {}, `Archived (${archived.length})`),
      archived.length ? list("archived", archived) : el("p", { class: "empty" }, filtered ? "Nobody archived matches." : "Nothing archived."),
    ];
  }

  // ---------------------------------------------------------------------------------
  // A Person: detail, archive/restore.

  function field(label, value) {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) return null;
    return [el("dt", {}, label), el("dd", {}, Array.isArray(value) ? value.join(", ") : String(value))];
  }

  async function detail(id) {
    const mine = generation;
    const target = el("div");
    const heading = el("h2", {}, "Person");
    show(heading, target);
    await guarded(target, async () => {
      const [{ body: person, version }, sessions, home] = await Promise.all([call("GET", "/people/" + encodeURIComponent(id)), liveSessions(), homeOverview()]);
      const online = sessions.some((session) => session.live && session.person_id === person.id);
      const budget = person.budget || {};
      const toggle = person.archived
        ? el("button", { type: "button", id: "restore", onclick: () => setArchived(person.id, false, version) }, "Restore")
        : dangerous({ id: "archive" }, "Archive", "Archive " + person.name + "? It can no longer be started; Restore brings it back.", () => setArchived(person.id, true, version));
      follow(() => redraw(() => detail(id)), mine);
      heading.textContent = person.name;
      const identity = await personIdentity(person, sessions, home);
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
          field("Time limit", budget.max_seconds === undefined || budget.max_seconds === null ? null : duration(budget.max_seconds)),
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
        ...identity,
      );
    });
  }

  // A Person and composition: its role's card in the role's colour, the role's current
  // bundle and how many skills it holds, and the Person's recent sessions.
  async function personIdentity(person, sessions, home) {
    const roles = rolesByName(home);
    const role = roles.get(person.role);
    const colours = personColours(person, roles);
    const bundle = (home.bundles || []).find((candidate) => candidate.current && candidate.role === person.role);
    let skills = null;
    if (bundle) {
      try {
        const described = await api("GET", "/bundles/" + encodeURIComponent(bundle.id));
        skills = described.budget ? described.budget.total_skills : null;
      } catch (_) {
        skills = null;
      }
    }
    const identity = role ? role.identity || {} : {};
    const card = el(
      "section",
      { id: "person-role", class: "role-summary", "aria-labelledby": "person-role-heading", style: "--role-colour: " + colours.role },
      el("h3", { id: "person-role-heading" }, avatarOf(person.name, colours), " Role"),
      role
        ? el("p", {}, swatch(role.favorite_color, "role colour"), " ", el("strong", {}, role.display_name || role.role), " (", role.role, ")", identity.name ? " · works as " + identity.name + (identity.pronouns ? " (" + identity.pronouns + ")" : "") : "")
        : el("p", {}, el("strong", {}, person.role), " is not a role of the roster: sessions start with the host's own context."),
      role && role.purpose ? el("p", { class: "note" }, role.purpose) : null,
      bundle
        ? el("p", { id: "person-bundle" }, "Current bundle ", el("a", { href: "#/bundles/" + encodeURIComponent(bundle.id), title: "Bundle " + bundle.id }, el("code", {}, bundle.id.slice(0, 12))), skills === null ? "" : " · " + skills + (skills === 1 ? " skill" : " skills"))
        : el("p", { id: "person-bundle", class: "empty" }, role ? "No bundle composed for this role yet." : "No bundle: the role is not the roster's."),
    );
    const recent = sessions.filter((session) => session.person_id === person.id).slice(0, 5);
    const table = recent.length
      ? el(
          "table",
          { id: "person-sessions", class: "stack" },
          el("thead", {}, el("tr", {}, ["Started", "Project", "Runner", "Status"].map((name) => el("th", { scope: "col" }, name)))),
          el(
            "tbody",
            {},
            recent.map((session) =>
              el(
                "tr",
                { "data-session": session.id },
                el("td", { "data-label": "Started" }, el("a", { href: "#/sessions/" + encodeURIComponent(session.id), title: "Session " + session.id }, localTime(session.started_at))),
                el("td", { "data-label": "Project" }, session.project_id),
                el("td", { "data-label": "Runner" }, session.provider),
                el("td", { "data-label": "Status", class: "session-status" }, statusWords(session)),
              ),
            ),
          ),
        )
      : el("p", { class: "empty" }, "No sessions yet.");
    return [card, el("h3", {}, "Recent sessions"), table];
  }

  // A danger action asks first: its button (outlined in the danger colour) opens a
  // confirmation beside it that says what will happen, with the action again (solid)
  // and Cancel; only the confirmation acts. Returns the button.
  function dangerous(attributes, label, question, act) {
    const button = el("button", {
      ...attributes,
      type: "button",
      class: "danger",
      onclick: () => {
        const close = () => {
          ask.remove();
          button.hidden = false;
        };
        const yes = el("button", { type: "button", id: attributes.id + "-confirm", class: "danger solid", onclick: async () => {
          close();
          await act();
        } }, label);
        const no = el("button", { type: "button", id: attributes.id + "-cancel", class: "clear", onclick: () => {
          close();
          button.focus();
        } }, "Cancel");
        const ask = el("span", { class: "confirm", role: "group", "aria-label": question }, el("span", {}, question), " ", yes, " ", no);
        button.hidden = true;
        button.after(ask);
        yes.focus();
      },
    }, label);
    return button;
  }

  async function setArchived(id, archived, version) {
    const result = document.getElementById("action-result");
    await guarded(result, async () => {
      await api("POST", "/people/" + encodeURIComponent(id) + (archived ? "/archive" : "/restore"), undefined, version);
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

  // What a control's value breaks, in the page's words (the browser's own bubbles are
  // off: the form says it in its result box, next to Save).
  function invalidSentence(control) {
    const label = (document.querySelector(`label[for="${control.id}"]`) || {}).textContent || control.name;
    const state = control.validity;
    const hint = control.dataset.rule;
    let what = "is not valid";
    if (state.valueMissing) what = "is needed";
    else if (state.patternMismatch || state.typeMismatch) what = hint ? "takes " + hint : "is not in the right form";
    else if (state.tooLong) what = `is too long: at most ${control.maxLength} characters`;
    else if (state.rangeUnderflow) what = `is at least ${control.min}`;
    else if (state.rangeOverflow) what = `is at most ${control.max}`;
    else if (state.stepMismatch || state.badInput) what = "takes a whole number";
    return { label, sentence: `“${label}” ${what}.` };
  }

  // Checks the form as the schema will; on a problem, lists each in the result box,
  // marks the fields and moves focus to the first. Returns whether the form is valid.
  function checkForm(form, result) {
    const invalid = [...form.elements].filter((control) => control.willValidate && !control.checkValidity());
    for (const control of form.elements) {
      if (control.willValidate) control.setAttribute("aria-invalid", String(invalid.includes(control)));
    }
    if (!invalid.length) return true;
    result.replaceChildren(
      el(
        "div",
        { class: "error", role: "alert", "data-code": "form-invalid" },
        el("p", { class: "sentence" }, invalid.length === 1 ? "One field needs fixing before this can be saved." : `${invalid.length} fields need fixing before this can be saved.`),
        el("ul", {}, invalid.map((control) => el("li", {}, invalidSentence(control).sentence))),
      ),
    );
    invalid[0].focus();
    return false;
  }

  // Max seconds as people say it, beside the box, as it is typed.
  function secondsHint(control) {
    const said = el("small", { id: "field-max_seconds-said", "aria-live": "polite" });
    const update = () => {
      const value = Number(control.value);
      said.textContent = control.value && Number.isInteger(value) && value >= 0 ? "= " + duration(value) : "";
    };
    control.addEventListener("input", update);
    update();
    return said;
  }

  // The roster's roles and the roles in use, offered for the Role box; the runners
  // for the preferred provider. Filled in when they arrive.
  function offerChoices(roleList, providerList) {
    Promise.all([homeOverview(), api("GET", "/people").catch(() => ({ people: [] })), api("GET", "/runners").catch(() => ({ runners: [] }))]).then(([home, people, runners]) => {
      const roles = new Map((home.roles || []).map((role) => [role.role, role.display_name || role.role]));
      for (const person of people.people || []) if (!roles.has(person.role)) roles.set(person.role, "in use");
      roleList.replaceChildren(...[...roles].map(([value, label]) => el("option", { value, label })));
      providerList.replaceChildren(...(runners.runners || []).map((runner) => el("option", { value: runner.name, label: runner.available ? "on this machine" : "not installed" })));
    });
  }

  function personForm(person, isNew, version) {
    const budget = person.budget || {};
    const avatar = person.avatar || {};
    const roleList = el("datalist", { id: "role-choices" });
    const providerList = el("datalist", { id: "provider-choices" });
    const seconds = input("max_seconds", "Max seconds", { type: "number", min: 0, max: 31536000, step: 1, hint: "how long a session may run; it is ended then" }, budget.max_seconds);
    seconds.append(secondsHint(seconds.querySelector("input")));
    const accent = input("avatar_accent", "Avatar accent", { pattern: "#[0-9a-fA-F]{6}", hint: "#rrggbb, or pick a colour", "data-rule": "a colour as #rrggbb" }, avatar.accent);
    const accentText = accent.querySelector("input");
    const picker = el("input", { type: "color", id: "field-avatar_accent_picker", "aria-label": "Pick the avatar accent", value: /^#[0-9a-fA-F]{6}$/.test(avatar.accent || "") ? avatar.accent : "#1f4f99" });
    picker.addEventListener("input", () => (accentText.value = picker.value));
    accentText.addEventListener("input", () => /^#[0-9a-fA-F]{6}$/.test(accentText.value) && (picker.value = accentText.value));
    accent.insertBefore(picker, accentText.nextSibling);
    const slugRule = { pattern: SLUG, "data-rule": "lowercase letters, digits, - and _ (starting with a letter or digit)" };
    const referenceRule = { pattern: REFERENCE, "data-rule": "letters, digits and . _ : / -" };
    const cancel = el("a", { class: "button clear", id: "cancel", href: isNew ? "#/people" : "#/people/" + encodeURIComponent(person.id) }, "Cancel");
    const form = el(
      "form",
      { id: "person-form", novalidate: true, class: "form-grid" },
      el(
        "fieldset",
        {},
        el("legend", {}, "Who"),
        input("id", "Id", { required: true, maxlength: 64, readonly: isNew ? null : true, hint: "lowercase letters, digits, - and _; it cannot change later", ...slugRule }, person.id),
        input("name", "Name", { required: true, maxlength: 128 }, person.name),
        input("role", "Role", { required: true, maxlength: 64, list: "role-choices", hint: "a role of the roster, or your own", ...slugRule }, person.role),
        roleList,
        input("goal", "Goal", { required: true, maxlength: 2048, multiline: true }, person.goal),
      ),
      el(
        "fieldset",
        {},
        el("legend", {}, "How it works"),
        input("definition_id", "Definition id", { maxlength: 128, ...referenceRule }, person.definition_id),
        input("preferred_provider", "Preferred provider", { maxlength: 128, list: "provider-choices", hint: "the runner its sessions start with", ...referenceRule }, person.preferred_provider),
        providerList,
        input("preferred_model", "Preferred model", { maxlength: 128, ...referenceRule }, person.preferred_model),
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
      ),
      el(
        "fieldset",
        {},
        el("legend", {}, "Limits and look"),
        input("max_tokens", "Max tokens", { type: "number", min: 0, max: 1000000000, step: 1 }, budget.max_tokens),
        input("max_cost_usd", "Max cost (USD)", { type: "number", min: 0, max: 1000000, step: "any" }, budget.max_cost_usd),
        seconds,
        input("avatar_character", "Avatar character", { maxlength: 64, ...slugRule }, avatar.character),
        accent,
      ),
      el("div", { class: "actions wide" }, el("button", { type: "submit", id: "save" }, isNew ? "Create" : "Save"), cancel),
      el("div", { id: "form-result", class: "wide" }),
    );
    offerChoices(roleList, providerList);
    form.addEventListener("submit", tracked(async (event) => {
      event.preventDefault();
      const result = document.getElementById("form-result");
      if (!checkForm(form, result)) return;
      const document_ = documentFrom(form, person);
      const tooLong = ["capabilities", "skills", "mcp_servers"].find((key) => (document_[key] || []).length > MAX_LIST);
      if (tooLong) {
        result.replaceChildren(errorBox(new ApiError(0, { code: "too-many-items", message: `at most ${MAX_LIST} items`, pointer: "/properties/" + tooLong + "/maxItems" }, "saved")));
        return;
      }
      try {
        const saved = isNew
          ? await api("POST", "/people", document_)
          : await api("PUT", "/people/" + encodeURIComponent(person.id), document_, version);
        say(isNew ? "Created." : "Saved.", true);
        go("#/people/" + encodeURIComponent(saved.id));
      } catch (error) {
        if (error instanceof ApiError && error.status === 409 && error.body.code === "stale-version") showChanged(form, person, error.body.current, true);
        else result.replaceChildren(errorBox(error));
      }
    }));
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
    const mine = generation;
    const target = el("div");
    show(el("h2", {}, "Edit Person"), target);
    await guarded(target, async () => {
      const { body: person, version } = await call("GET", "/people/" + encodeURIComponent(id));
      const form = personForm(person, false, version);
      target.replaceChildren(form);
      // A change made elsewhere while the form is open is said at once, not at Save.
      follow(async (kinds) => {
        if (!kinds.includes("people")) return;
        try {
          const now = await call("GET", "/people/" + encodeURIComponent(id));
          if (now.version !== version) showChanged(form, person, now.body, false);
        } catch (error) {
          showChanged(form, person, null, false);
        }
      }, mine);
    });
  }

  // What differs between the Person a form was opened with and the one on disk now.
  function differences(before, after) {
    const flat = (person, prefix, into) => {
      for (const [key, value] of Object.entries(person || {})) {
        if (value && typeof value === "object" && !Array.isArray(value)) flat(value, prefix + key + ".", into);
        else into[prefix + key] = Array.isArray(value) ? value.join(", ") : String(value);
      }
      return into;
    };
    const old = flat(before, "", {});
    const now = flat(after, "", {});
    const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].sort();
    return keys.filter((key) => old[key] !== now[key]).map((key) => ({ key, before: old[key], after: now[key] }));
  }

  // The edit cannot be saved over a newer version: say what changed, keep the reader's
  // edits in the form, and offer the current version.
  function showChanged(form, opened, current, refused) {
    const box = form.querySelector("#form-stale") || el("div", { id: "form-stale", class: "error", role: "alert" });
    const changes = current ? differences(opened, current) : [];
    box.replaceChildren(
      el(
        "p",
        { class: "sentence" },
        refused
          ? "Not saved: this Person was changed since you opened the form (in another tab or with the cli). Nothing was written."
          : current
            ? "This Person was changed since you opened the form (in another tab or with the cli); Save would be refused."
            : "This Person was removed or cannot be read since you opened the form.",
      ),
      changes.length
        ? el(
            "table",
            { class: "changes" },
            el("caption", {}, "What changed"),
            el("thead", {}, el("tr", {}, ["Field", "When you opened it", "Now"].map((name) => el("th", { scope: "col" }, name)))),
            el("tbody", {}, changes.map((change) => el("tr", {}, el("td", { "data-label": "Field" }, labelOf(change.key)), el("td", { "data-label": "When you opened it" }, change.before === undefined ? "(not set)" : change.before), el("td", { "data-label": "Now" }, change.after === undefined ? "(not set)" : change.after)))),
          )
        : null,
      current
        ? el("div", { class: "actions" }, el("button", { type: "button", id: "reload-current", onclick: () => redraw(() => edit(current.id)) }, "Discard my edits and open the current version"))
        : null,
    );
    if (!box.isConnected) form.prepend(box);
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
    form.addEventListener("submit", tracked(async (event) => {
      event.preventDefault();
      const file = document.getElementById("hire-file").files[0];
      if (!file) return;
      upload = { name: file.name, content: await file.text() };
      await guarded(result, async () => {
        const review = await api("POST", "/people/import", request(upload.content));
        reveal(result, reviewTable(review, async () => {
          // A refused Save keeps the review on screen, with the reason above Save.
          const saveResult = document.getElementById("save-result");
          await guarded(saveResult, async () => {
            const saved = await api("POST", "/people/import/save", request(upload.content));
            say("Imported as " + saved.person_id + ".", true);
            go("#/people/" + encodeURIComponent(saved.person_id));
          });
        }));
      });
    }));
    show(el("h2", {}, "Import a hire file"), el("p", {}, "The file is reviewed first; nothing is written until you press Save."), form, result);
  }

  // A mapped row's source or target as the reader knows it: a hire file's own key as it
  // is, an answer given in the review as the box it was typed in, a Person field as the
  // form labels it.
  function sourceLabel(source) {
    return source.startsWith("--") ? "Your answer: " + labelOf(source) : source;
  }

  function reviewTable(review, save) {
    const blocking = (review.needs_review || []).filter((item) => item.blocking);
    return el(
      "section",
      { "aria-labelledby": "review-heading", id: "import-review" },
      el("h3", { id: "review-heading" }, "Review of ", review.file),
      review.id_exists
        ? el("p", { class: "error", id: "id-exists", role: "alert" }, `A Person with the id “${review.person_id || (review.mapped || []).find((row) => row.target === "id")?.value || ""}” already exists. Choose another Id under “Answers for the review”, then Review again.`)
        : null,
      el("h4", {}, "Mapped fields"),
      el(
        "table",
        { id: "mapped", class: "stack" },
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "From the file"), el("th", { scope: "col" }, "Becomes"), el("th", { scope: "col" }, "Value"))),
        el(
          "tbody",
          {},
          (review.mapped || []).map((row) =>
            el(
              "tr",
              {},
              el("td", { "data-label": "From the file" }, sourceLabel(row.source)),
              el("td", { "data-label": "Becomes" }, labelOf(row.target)),
              el("td", { "data-label": "Value" }, row.value, row.note ? el("small", { class: "note" }, " — ", inPageTerms(row.note)) : null),
            ),
          ),
        ),
      ),
      el("h4", {}, "Ignored fields"),
      (review.ignored || []).length
        ? el("ul", { id: "ignored" }, review.ignored.map((item) => el("li", {}, el("code", {}, item.name), " — ", item.reason)))
        : el("p", { id: "ignored" }, "None."),
      (review.needs_review || []).length
        ? [
            el("h4", {}, "Needs your answer"),
            el(
              "ul",
              { id: "needs-review" },
              review.needs_review.map((item) =>
                el("li", { class: item.blocking ? "blocking" : "" }, "“", labelOf(item.field), "” ", inPageTerms(item.message), item.blocking ? " (blocks saving)" : ""),
              ),
            ),
          ]
        : null,
      el(
        "div",
        { class: "actions" },
        el("button", { type: "button", id: "save-import", disabled: !review.ready_to_save, onclick: save }, "Save"),
        review.ready_to_save ? null : el("span", {}, blocking.length ? " Answer the blocking items above under “Answers for the review”, then Review again." : " Review again after changing the answers."),
      ),
      el("div", { id: "save-result" }),
    );
  }

  // ---------------------------------------------------------------------------------
  // The swarm view: a recipe's roles, a Person per role, the preview, Remember / Clear.

  // Why resolution passed over a candidate, in words.
  const SKIP_REASONS = {
    missing: "has no Person file",
    archived: "is archived",
    "already-used": "already fills an earlier role",
    incompatible: "is bound to another agent definition than this role asks for",
  };
  const RULE_WORDS = {
    explicit: "chosen here",
    "bindings-pin": "pinned",
    preference: "fallback",
    "role-match": "same role",
    "definition-match": "same definition",
    ephemeral: "nobody: a temporary agent",
  };

  function swarmView() {
    const result = el("div", { id: "swarm-result" });
    const saved = el("div", { id: "saved-recipes" });
    const form = el(
      "form",
      { id: "swarm-form" },
      el("div", { class: "field" }, el("label", { for: "recipe-file" }, "Or preview a recipe file (.json, .yaml)"), el("input", { type: "file", id: "recipe-file", accept: ".json,.yaml,.yml", required: true })),
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
        result.replaceChildren(swarmTable(resolution, people.people || [], bindings, assignments, preview, result));
        if (window.acomposeSwarm) result.append(window.acomposeSwarm.startForm(recipe, assignments));
      });
    };
    const use = async (name, content) => {
      recipe = { name, content };
      await preview([]);
    };
    form.addEventListener("submit", tracked(async (event) => {
      event.preventDefault();
      const file = document.getElementById("recipe-file").files[0];
      if (!file) return;
      await use(file.name, await file.text());
    }));
    show(
      el("h2", {}, "Swarm"),
      el("p", {}, "Make a recipe (which roles work together), choose who fills each role, then review and start the run."),
      result,
      saved,
      form,
    );
    savedRecipes(saved, use);
  }

  // The recipes saved in the workspace, and the form that makes a new one.
  async function savedRecipes(target, use) {
    await guarded(target, async () => {
      const [listing, people] = await Promise.all([api("GET", "/recipes"), api("GET", "/people")]);
      const recipes = listing.recipes || [];
      const known = [...new Set((people.people || []).filter((person) => !person.archived).map((person) => person.role))].sort();
      const chooser = recipes.length
        ? el(
            "ul",
            { id: "recipe-list", class: "plain" },
            recipes.map((stored) =>
              el(
                "li",
                { "data-recipe": stored.file },
                stored.text === null
                  ? el("span", {}, stored.file, " — cannot be read: ", (stored.findings[0] || {}).message || "")
                  : el("button", { type: "button", class: "clear use-recipe", onclick: () => use(stored.file.split("/").pop(), stored.text) }, stored.file.split("/").pop().replace(/\.(json|ya?ml)$/, "")),
                " ",
                el("small", {}, stored.roles.map((slot) => slot.role).join(", ")),
              ),
            ),
          )
        : el("p", { class: "empty" }, "No saved recipes yet.");
      const roleBoxes = known.map((role) =>
        el("label", { class: "choice" }, el("input", { type: "checkbox", name: "recipe_role", value: role }), " ", role),
      );
      const maker = el(
        "form",
        { id: "recipe-form" },
        el("h3", {}, "New recipe"),
        input("recipe_name", "Recipe name", { required: true, maxlength: 64, pattern: SLUG, hint: "lowercase letters, digits, - and _; saved as recipes/<name>.json" }),
        roleBoxes.length ? el("fieldset", {}, el("legend", {}, "Roles of your People"), roleBoxes) : null,
        input("recipe_more", "Other roles, in order", { multiline: true, hint: "one per line; a role may add its agent definition after a space" }),
        el("div", { class: "actions" }, el("button", { type: "submit", id: "save-recipe" }, "Save recipe")),
        el("div", { id: "recipe-result" }),
      );
      maker.addEventListener("submit", tracked(async (event) => {
        event.preventDefault();
        if (!maker.reportValidity()) return;
        const roles = [...maker.querySelectorAll("input[name=recipe_role]:checked")].map((box) => ({ role: box.value }));
        for (const line of maker.elements.recipe_more.value.split("\n").map((item) => item.trim()).filter(Boolean)) {
          const [role, persona] = line.split(/\s+/, 2);
          roles.push(persona ? { role, persona } : { role });
        }
        const name = maker.elements.recipe_name.value.trim();
        await guarded(document.getElementById("recipe-result"), async () => {
          const savedRecipe = await api("POST", "/recipes", { name, roles });
          say("Saved " + savedRecipe.file + ".");
          await savedRecipes(target, use);
          await use(savedRecipe.file.split("/").pop(), savedRecipe.text);
        });
      }));
      target.replaceChildren(el("h3", {}, "Saved recipes"), chooser, maker);
    });
  }

  function skippedList(skipped) {
    if (!skipped || !skipped.length) return null;
    return el(
      "ul",
      { class: "skipped" },
      skipped.map((skip) =>
        el("li", {}, "Passed over ", skip.person_id, ": ", SKIP_REASONS[skip.reason] || skip.reason, " (", RULE_WORDS[skip.candidate] || skip.candidate, skip.preference ? " " + skip.preference : "", ")"),
      ),
    );
  }

  function swarmTable(resolution, people, bindingsDocument, assignments, preview, result) {
    const bindings = bindingsDocument.bindings;
    const active = people.filter((person) => !person.archived);
    const chosen = new Map(assignments.map((assignment) => [assignment.role, assignment.person_id]));
    const pinOf = (role) => bindings && bindings.roles && bindings.roles[role] ? bindings.roles[role] : {};
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
      const pinned = pinOf(role.role).person_id;
      const fallbacks = pinOf(role.role).preferred_people || [];
      const fallbackId = "fallbacks-" + role.role;
      const fallbackInput = el("input", { type: "text", id: fallbackId, value: fallbacks.join(", "), "aria-describedby": fallbackId + "-hint" });
      return el(
        "tr",
        { "data-role": role.role },
        el("th", { scope: "row" }, role.role, role.persona ? el("small", {}, " ", role.persona) : null),
        el("td", { "data-label": "Assign" }, el("label", { for: selectId, class: "visually-hidden" }, "Person for " + role.role), select),
        el("td", { class: "resolved", "data-label": "Resolved" }, role.person_id || "(nobody)"),
        el("td", { "data-label": "Why" }, RULE_WORDS[role.rule] || role.rule, role.preference ? " " + role.preference : "", skippedList(role.skipped)),
        el(
          "td",
          { "data-label": "Binding" },
          el("button", { type: "button", class: "remember", disabled: !role.person_id, onclick: () => pin(role.role, { person_id: role.person_id }, bindingsDocument, preview, assignments, result) }, "Remember"),
          " ",
          el("button", { type: "button", class: "clear", disabled: !pinned, onclick: () => pin(role.role, { person_id: null }, bindingsDocument, preview, assignments, result) }, "Clear"),
          pinned ? el("small", { class: "pinned" }, " pinned: ", pinned) : null,
          el(
            "div",
            { class: "fallbacks" },
            el("label", { for: fallbackId }, "Fallbacks, in order"),
            fallbackInput,
            el("small", { id: fallbackId + "-hint" }, "Person ids, comma-separated; tried in order when the pinned Person cannot fill the role"),
            el("button", { type: "button", class: "clear save-fallbacks", onclick: () => pin(role.role, { preferred_people: listValue(fallbackInput.value) }, bindingsDocument, preview, assignments, result) }, "Save fallbacks"),
          ),
        ),
      );
    });
    const refused = resolution.rejections || [];
    return el(
      "div",
      {},
      refused.length
        ? el("div", { class: "error", role: "alert", id: "swarm-refused" }, el("p", { class: "sentence" }, "Some choices could not be used, so those roles were resolved without them:"), el("ul", {}, refused.map((rejection) => el("li", {}, capitalise(rejection.message) + ".", el("small", { class: "details" }, rejection.code)))))
        : null,
      el(
        "table",
        { id: "swarm", class: "stack" },
        el("caption", {}, "Roles of ", resolution.recipe),
        el("thead", {}, el("tr", {}, ["Role", "Assign", "Resolved", "Why", "Binding"].map((name) => el("th", { scope: "col" }, name)))),
        el("tbody", {}, rows),
      ),
    );
  }

  // Changes one role's binding (its pin, its fallbacks) and saves the bindings with the
  // version they were read at.
  async function pin(role, change, bindingsDocument, preview, assignments, result) {
    const roles = JSON.parse(JSON.stringify((bindingsDocument.bindings && bindingsDocument.bindings.roles) || {}));
    const next = Object.assign({}, roles[role] || {}, change);
    roles[role] = next;
    for (const [name, binding] of Object.entries(roles)) {
      if (binding.person_id === null || binding.person_id === undefined) delete binding.person_id;
      if (!binding.preferred_people || !binding.preferred_people.length) delete binding.preferred_people;
      if (!Object.keys(binding).length) delete roles[name];
    }
    await guarded(result, async () => {
      await api("PUT", "/people/bindings", { spec: "agent-toolkit/people-bindings@1", roles }, bindingsDocument.version);
      if ("preferred_people" in change) say("Saved the fallbacks of " + role + ".");
      else say(change.person_id ? "Remembered " + change.person_id + " for " + role + "." : "Cleared the pin of " + role + ".");
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
        // The goal is already in the prompt; the task is what this session adds to it.
        input("start_task", "Task for this session (optional; used once, stored nowhere)", { multiline: true, maxlength: 8192, hint: "The Person's goal is always part of the prompt: “" + person.goal + "”" }),
        el("div", { class: "actions" }, el("button", { type: "submit", id: "review-start" }, "Review")),
      );
      if (!(projects.projects || []).length) form.prepend(el("p", { class: "error" }, "There is no project yet: add a project folder first on the Projects page.", " ", el("a", { href: "#/projects" }, "Add a project")));
      if (!available.length) form.prepend(el("p", { class: "error" }, "No runner was found on PATH."));
      const request = () => {
        const body = { person_id: person.id, project_id: form.querySelector("#start-project").value, runner: form.querySelector("#start-runner").value };
        const model = form.elements.start_model.value.trim();
        const task = form.elements.start_task.value;
        if (model) body.model = model;
        if (task.trim()) body.task = task;
        return body;
      };
      form.addEventListener("submit", tracked(async (event) => {
        event.preventDefault();
        if (!form.reportValidity()) return;
        await guarded(reviewBox, async () => {
          const review = await api("POST", "/sessions/review", request());
          reveal(reviewBox, startReview(review, request));
        });
      }));
      target.replaceChildren(form, reviewBox);
    });
  }

  // A number of seconds as people say it.
  function duration(seconds) {
    if (seconds === null || seconds === undefined) return null;
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    const rest = seconds % 60;
    const parts = [];
    if (hours) parts.push(hours + (hours === 1 ? " hour" : " hours"));
    if (minutes) parts.push(minutes + (minutes === 1 ? " minute" : " minutes"));
    if (rest || !parts.length) parts.push(rest + (rest === 1 ? " second" : " seconds"));
    return parts.join(" ");
  }

  function startReview(review, request) {
    const unsupported = review.unsupported_details || [];
    const box = unsupported.length ? el("input", { type: "checkbox", id: "acknowledge" }) : null;
    const acknowledge = box ? el("div", { class: "field" }, el("label", { for: "acknowledge" }, box, " Start anyway: the limits above are not enforced")) : null;
    const result = el("div", { id: "start-result" });
    const section = el(
      "section",
      { "aria-labelledby": "start-review-heading" },
      el("h3", { id: "start-review-heading" }, "Review"),
      el(
        "dl",
        { class: "fields", id: "start-facts" },
        field("Folder", review.cwd),
        field("Runner", review.runner),
        field("Model", review.model),
        field("Time limit", review.max_seconds !== null && review.max_seconds !== undefined ? duration(review.max_seconds) + (unsupported.some((limit) => limit.field === "budget.max_seconds") ? " (not enforced with this runner)" : " (enforced: the session is ended when it runs out)") : "none (Max seconds is not set)"),
        field("Command", review.command_line),
        // As a roster role: the role's MCP servers, and which of the Person's it admits.
        review.as_role ? field("MCP servers", review.as_role.mcp_servers.length ? review.as_role.mcp_servers : "none") : null,
        review.as_role ? field("Person's MCP servers (delivered)", review.as_role.person_mcp_offered) : null,
        review.as_role ? field("Not admitted by the role (not delivered)", review.as_role.person_mcp_not_admitted) : null,
      ),
      el("h4", {}, "Prompt"),
      el("pre", { id: "prompt-preview", tabindex: "0" }, review.prompt),
      unsupported.length ? [el("h4", {}, "Limits this runner cannot enforce"), el("ul", { id: "unsupported" }, unsupported.map((limit) => el("li", {}, "“", labelOf(limit.field), "” — ", limit.explanation)))] : null,
      acknowledge,
      el(
        "div",
        { class: "actions" },
        el(
          "button",
          {
            type: "button",
            id: "start-now",
            // Start waits for the acknowledgement when a limit is not enforced.
            disabled: Boolean(box),
            onclick: async () => {
              const body = request();
              body.acknowledge_unsupported = Boolean(acknowledge && acknowledge.querySelector("input").checked);
              // The runner gets the conversation id the review's command line shows.
              if (review.conversation) body.conversation = review.conversation;
              await guarded(result, async () => {
                const session = await api("POST", "/sessions", body);
                go("#/sessions/" + encodeURIComponent(session.id));
              });
            },
          },
          "Start",
        ),
      ),
      result,
    );
    if (box) box.addEventListener("change", () => (section.querySelector("#start-now").disabled = !box.checked));
    return section;
  }

  // Signals by number, for an exit status of 128 + n (as shells and the runner report a
  // process a signal ended).
  const SIGNALS = { 1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM" };

  // A timestamp in the viewer's own time zone and words.
  function localTime(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
  }

  const STATUS_WORDS = { launching: "starting", running: "running", completed: "completed", failed: "failed", stopped: "stopped", timed_out: "timed out", budget_exceeded: "budget exceeded", interrupted: "interrupted" };

  // How a session ended: the exit code or the signal, and when.
  function ending(session) {
    if (session.status === "running" || session.status === "launching") return "";
    const parts = [];
    const code = session.exit_code;
    if (code !== null && code !== undefined) {
      if (code > 128 && code < 128 + 65) parts.push(`ended by signal ${code - 128}${SIGNALS[code - 128] ? " (" + SIGNALS[code - 128] + ")" : ""}, exit code ${code}`);
      else parts.push(`exit code ${code}`);
    } else if (session.status === "interrupted") {
      parts.push("its process vanished without an exit status");
    } else {
      parts.push("no exit status");
    }
    if (session.ended_at) parts.push("ended " + localTime(session.ended_at));
    return parts.join("; ");
  }

  function statusWords(session) {
    return STATUS_WORDS[session.status] || session.status;
  }

  async function sessionsView() {
    const mine = generation;
    const target = el("div");
    show(el("h2", {}, "Sessions"), target);
    follow((kinds) => kinds.includes("sessions") && redraw(sessionsView), mine);
    await guarded(target, async () => {
      const [listing, home] = await Promise.all([api("GET", "/sessions"), homeOverview()]);
      const sessions = listing.sessions || [];
      const roles = rolesByName(home);
      target.replaceChildren(
        sessions.length
          ? el(
              "table",
              { id: "sessions", class: "stack" },
              el("thead", {}, el("tr", {}, ["Started", "Person", "Project", "Runner", "Status", "Ended"].map((name) => el("th", { scope: "col" }, name)))),
              el(
                "tbody",
                {},
                sessions.map((session) =>
                  el(
                    "tr",
                    { "data-session": session.id },
                    el("td", { "data-label": "Started" }, el("a", { href: "#/sessions/" + encodeURIComponent(session.id), title: "Session " + session.id }, localTime(session.started_at))),
                    el("td", { "data-label": "Person", title: "Person id: " + session.person_id }, roleSwatch(roles, session.role), " ", session.person),
                    el("td", { "data-label": "Project" }, session.project_id),
                    el("td", { "data-label": "Runner" }, session.provider),
                    el("td", { "data-label": "Status", class: "session-status", "data-status": session.status }, statusWords(session), session.live ? (session.attachable ? " (live here)" : " (live)") : ""),
                    el("td", { "data-label": "Ended", class: "session-ending" }, ending(session) || "—"),
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
    const mine = generation;
    const target = el("div");
    show(el("h2", {}, "Session"), target);
    await guarded(target, async () => {
      const session = await api("GET", "/sessions/" + encodeURIComponent(id));
      const statusText = el("span", { id: "session-status", "data-status": session.status }, statusWords(session));
      const endText = el("span", { id: "session-ending" }, ending(session));
      const screen = el("div", { id: "terminal", class: "terminal", role: "region", "aria-label": "Terminal of the session" });
      const stop = dangerous({ id: "stop", disabled: !session.live }, "Stop", "Stop this session? Its runner and everything it started are ended.", async () => {
        await guarded(result, async () => {
          const stopped = await api("POST", "/sessions/" + encodeURIComponent(id) + "/stop");
          update(stopped);
          say("Stopped.");
        });
      });
      const result = el("div");
      // The record as it is now: status, how it ended, whether Stop still applies.
      const update = (now) => {
        statusText.textContent = statusWords(now);
        statusText.dataset.status = now.status;
        endText.textContent = ending(now);
        stop.disabled = !now.live;
      };
      follow(async (kinds) => {
        if (!kinds.includes("sessions")) return;
        try {
          update(await api("GET", "/sessions/" + encodeURIComponent(id)));
        } catch (_) {
          // The next change tries again.
        }
      }, mine);
      target.replaceChildren(
        el(
          "dl",
          { class: "fields", id: "session-facts" },
          field("Person", session.person),
          field("Project", session.project_id),
          field("Runner", session.provider + (session.model ? " · " + session.model : "")),
          field("Started", localTime(session.started_at)),
          [el("dt", {}, "Status"), el("dd", {}, statusText, " ", endText)],
          field("Session id", session.id),
        ),
        el("div", { class: "actions" }, stop, el("a", { class: "button", href: "#/people/" + encodeURIComponent(session.person_id) }, "Person"), window.acomposeSwarm ? window.acomposeSwarm.sessionActions(session, result) : null),
        screen,
        result,
      );
      if (session.attachable) {
        screen.before(el("p", { class: "note", id: "terminal-keys" }, "Keys typed in the terminal go to the runner, Tab included. To leave it, press Escape, then Tab."));
        await attachTerminal(id, screen, statusText, stop);
      }
      // Its runner lives but this server does not hold its terminal: it was started by
      // `acompose people start`, by another server, or by one that has since stopped.
      else if (session.live) screen.append(el("p", { class: "empty" }, "This session was started outside this page (by ", el("code", {}, "acompose people start"), ", another ", el("code", {}, "acompose serve"), ", or a server that has since stopped), so its terminal is not shown here. It is still running; Stop ends it."));
      else screen.append(el("p", { class: "empty" }, "The session has ended; its terminal is closed."));
    });
  }

  // The terminal library (xterm.js, its fit addon and its style), loaded the first time
  // a screen shows a terminal and never on the others.
  let terminalLibrary = null;

  function loadTerminal() {
    const load = (node, place) =>
      new Promise((resolve, reject) => {
        node.addEventListener("load", resolve);
        node.addEventListener("error", () => reject(new Error("the terminal could not be loaded")));
        place(node);
      });
    if (!terminalLibrary) {
      const style = document.querySelector('link[href="/assets/app.css"]');
      terminalLibrary = Promise.all([
        // Before the page's own style, which adjusts the terminal's.
        load(el("link", { rel: "stylesheet", href: "/assets/xterm.css" }), (node) => style.before(node)),
        load(el("script", { src: "/assets/xterm.js" }), (node) => document.head.append(node)).then(() =>
          load(el("script", { src: "/assets/addon-fit.js" }), (node) => document.head.append(node)),
        ),
      ]);
      terminalLibrary.catch(() => (terminalLibrary = null));
    }
    return terminalLibrary;
  }

  async function attachTerminal(id, screen, statusText, stop) {
    await loadTerminal();
    // The reader may have moved on while the library loaded.
    if (!screen.isConnected) return;
    // A monospace font the system has and a line height with room below the baseline,
    // so `_` and descenders show at every device pixel ratio.
    const terminal = new window.Terminal({
      convertEol: false,
      cursorBlink: true,
      fontFamily: '"DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace',
      fontSize: 14,
      lineHeight: 1.2,
      scrollback: 5000,
    });
    const fit = new window.FitAddon.FitAddon();
    terminal.loadAddon(fit);
    terminal.open(screen);
    fit.fit();
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${window.location.host}/api/v1/sessions/${encodeURIComponent(id)}/terminal`, [TOKEN_PROTOCOL_PREFIX + token]);
    socket.binaryType = "arraybuffer";
    openSocket = socket;
    // Busy until the terminal's socket opens or fails.
    busy();
    let opening = true;
    const opened = () => {
      if (opening) done();
      opening = false;
    };
    socket.addEventListener("open", opened);
    socket.addEventListener("close", opened);
    const send = (message) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(message));
    socket.addEventListener("open", () => send({ type: "resize", cols: terminal.cols, rows: terminal.rows }));
    socket.addEventListener("message", (event) => {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.type === "exit") {
          statusText.textContent = STATUS_WORDS[message.status] || message.status;
          statusText.dataset.status = message.status;
          stop.disabled = true;
          changed(["sessions"]);
        }
      } else {
        terminal.write(new Uint8Array(event.data));
      }
    });
    socket.addEventListener("close", () => {
      stop.disabled = true;
      screen.dataset.closed = "true";
    });
    // Every key goes to the runner, Tab included; Escape then Tab (or Shift+Tab) leaves
    // the terminal for the page, as the note above it says.
    let escaped = false;
    terminal.attachCustomKeyEventHandler((event) => {
      if (event.type !== "keydown") return true;
      if (event.key === "Tab" && escaped) {
        escaped = false;
        return false;
      }
      escaped = event.key === "Escape";
      return true;
    });
    terminal.onData((data) => send({ type: "input", data }));
    terminal.onResize(({ cols, rows }) => send({ type: "resize", cols, rows }));
    window.addEventListener("resize", () => fit.fit());
  }

  // ---------------------------------------------------------------------------------
  // The World: each project a place, and in it the People whose sessions' runners live
  // there now (from /api/v1/world), redrawn whenever the sessions or People change.

  async function worldView() {
    const mine = generation;
    const target = el("div");
    show(el("h2", {}, "World"), el("p", {}, "Who is working where, now: each project, and the People whose sessions run in it. A Person appears here only while one of its runners lives."), target);
    follow(() => redraw(worldView), mine);
    await guarded(target, async () => {
      const world = await api("GET", "/world");
      const places = world.places || [];
      target.replaceChildren(
        places.length
          ? el("ul", { class: "places", id: "world" }, places.map(placeCard))
          : el("p", { class: "empty" }, "No projects yet: add one on the Projects screen, then start a session in it."),
      );
    });
  }

  function placeCard(place) {
    const present = place.present || [];
    return el(
      "li",
      { class: "place", "data-place": place.project_id },
      el("h3", {}, place.project_id, place.linked ? null : el("small", { class: "note" }, " (no longer linked)")),
      present.length
        ? el("ul", { class: "plain present" }, present.map(presentPerson))
        : el("p", { class: "empty" }, "Nobody is working here now."),
    );
  }

  function presentPerson(entry) {
    const sessions = entry.sessions || [];
    const accent = entry.avatar ? entry.avatar.accent : null;
    const badge = el("span", { class: "avatar", "aria-hidden": "true" }, String(entry.name || "?").slice(0, 1).toUpperCase());
    badge.style.borderColor = safeColour(accent || entry.role_color);
    const name = entry.ephemeral
      ? el("span", { class: "who" }, entry.name, el("small", { class: "note" }, " (temporary, no Person)"))
      : el("a", { class: "who", href: "#/people/" + encodeURIComponent(entry.person_id), title: "Person id: " + entry.person_id }, entry.name);
    return el(
      "li",
      { class: "present-person", "data-person": entry.person_id, style: "--role-colour: " + safeColour(entry.role_color || accent) },
      badge,
      el(
        "span",
        { class: "present-facts" },
        name,
        el("span", { class: "note" }, entry.role),
        sessions.map((session) =>
          el(
            "span",
            { class: "present-session" },
            el("a", { href: "#/sessions/" + encodeURIComponent(session.id), title: "Session " + session.id }, session.runner),
            " · ",
            el("span", { class: "session-status" }, STATUS_WORDS[session.status] || session.status),
            " since ",
            localTime(session.started_at),
            session.run ? [" · ", el("a", { href: "#/runs/" + encodeURIComponent(session.run) }, "swarm run")] : null,
          ),
        ),
      ),
    );
  }

  // ---------------------------------------------------------------------------------
  // Projects: the folders sessions start in, added by their path (the page makes the
  // link `projects/<id>` inside the workspace).

  async function projectsView() {
    const mine = generation;
    const target = el("div", { id: "project-list" });
    const result = el("div", { id: "project-result" });
    const form = el(
      "form",
      { id: "project-form" },
      el("h3", {}, "Add a project"),
      input("project_folder", "Folder", { required: true, maxlength: 4096, hint: "the project's full path on this machine, e.g. /home/you/src/app" }),
      input("project_id", "Project id", { required: true, maxlength: 64, pattern: SLUG, hint: "a short name: lowercase letters, digits, - and _" }),
      el("div", { class: "actions" }, el("button", { type: "submit", id: "add-project" }, "Add project")),
      result,
    );
    const folder = form.elements.project_folder;
    const id = form.elements.project_id;
    // The id is suggested from the folder's last name until the reader types one.
    folder.addEventListener("input", () => {
      if (id.dataset.typed) return;
      const last = folder.value.replace(/\/+$/, "").split("/").pop() || "";
      id.value = last.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^[-_]+/, "").slice(0, 64);
    });
    id.addEventListener("input", () => (id.dataset.typed = "true"));
    form.addEventListener("submit", tracked(async (event) => {
      event.preventDefault();
      if (!form.reportValidity()) return;
      await guarded(result, async () => {
        const project = await api("POST", "/projects", { id: id.value.trim(), folder: folder.value.trim() });
        say("Added the project " + project.id + ".");
        form.reset();
        delete id.dataset.typed;
        await listProjects(target);
      });
    }));
    show(el("h2", {}, "Projects"), el("p", {}, "Sessions start in a project's folder. Add one by its folder; nothing in the folder is changed."), target, form);
    follow((kinds) => kinds.includes("people") && listProjects(target), mine);
    await listProjects(target);
  }

  async function listProjects(target) {
    await guarded(target, async () => {
      const listing = await api("GET", "/projects");
      const projects = listing.projects || [];
      target.replaceChildren(
        projects.length
          ? el(
              "table",
              { id: "projects", class: "stack" },
              el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Project"), el("th", { scope: "col" }, "Folder"))),
              el("tbody", {}, projects.map((project) => el("tr", { "data-project": project.id }, el("td", { "data-label": "Project" }, project.id), el("td", { "data-label": "Folder" }, el("code", {}, project.folder))))),
            )
          : el("p", { class: "empty" }, "No projects yet."),
      );
    });
  }

  // ---------------------------------------------------------------------------------
  // Composition, read-only: the roles of the home's current bundles as cards, the
  // bundles, projections and store; one bundle's providers, budget and `--why`.

  function bytes(count) {
    if (count === null || count === undefined) return "";
    const units = ["bytes", "KiB", "MiB", "GiB"];
    let value = count;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return (unit ? value.toFixed(1) : String(value)) + " " + units[unit];
  }

  function swatch(color, label) {
    const box = el("span", { class: "swatch", role: "img", "aria-label": label + " " + color });
    box.style.background = /^#[0-9a-fA-F]{6}$/.test(color || "") ? color : "transparent";
    return box;
  }

  // A roster role as a card: its favourite colour, name, identity, personalities with
  // their colours and seats; a link to its current bundle when one exists.
  function roleCard(role, bundle) {
    const identity = role.identity || {};
    const name = role.display_name || role.role;
    return el(
      "li",
      { class: "card role-card", "data-role": role.role, style: "--role-colour: " + safeColour(role.favorite_color) },
      el("span", { class: "card-link" }, swatch(role.favorite_color, "favourite colour"), bundle ? el("a", { href: "#/bundles/" + encodeURIComponent(bundle.id) }, name) : el("span", {}, name)),
      el("span", { class: "card-role" }, role.role, identity.name ? " · " + identity.name : "", identity.pronouns ? " (" + identity.pronouns + ")" : ""),
      role.purpose ? el("span", { class: "note" }, role.purpose) : null,
      el(
        "ul",
        { class: "plain personalities" },
        (role.personalities || []).map((personality) => el("li", {}, swatch(personality.color, personality.slug), " ", personality.slug, " ", el("small", { class: "note" }, personality.color))),
      ),
      (role.seats || []).length
        ? el("span", { class: "note" }, "Seats: ", role.seats.map((seat) => seat.harness + (seat.tier ? " (" + seat.tier + ")" : "")).join(", "))
        : null,
      el("span", { class: "note bundle-state" }, bundle ? "Bundle " : "No bundle yet", bundle ? el("code", {}, bundle.id.slice(0, 12)) : null),
    );
  }

  // A colour from the roster, as CSS takes it: #rgb or #rrggbb only, else none.
  function safeColour(value) {
    return /^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/.test(String(value || "")) ? value : "transparent";
  }

  async function compositionView() {
    const target = el("div");
    show(el("h2", {}, "Composition"), el("p", {}, "The roster's roles and what acompose composed for them in this home, read-only. Change them with the roster and the acompose command."), target);
    await guarded(target, async () => {
      const home = await api("GET", "/home");
      // The roster's roles, each with its current bundle when one was composed.
      const current = new Map((home.bundles || []).filter((bundle) => bundle.current).map((bundle) => [bundle.role, bundle]));
      const roles = home.roles || [];
      target.replaceChildren(
        ...[
        el("h3", {}, "Roles"),
        home.roster_problem ? el("p", { class: "error" }, "The roster could not be loaded: " + home.roster_problem) : null,
        roles.length ? el("ul", { class: "cards", id: "roles" }, roles.map((role) => roleCard(role, current.get(role.role)))) : el("p", { class: "empty" }, "The roster has no roles."),
        roles.length && !current.size ? el("p", { class: "empty", id: "no-bundles" }, "No role has a bundle yet: run acompose in a terminal to compose them; each card then links to its bundle.") : null,
        el("h3", {}, "Bundles"),
        (home.bundles || []).length
          ? el(
              "table",
              { id: "bundles", class: "stack" },
              el("thead", {}, el("tr", {}, ["Role", "Bundle", "Made", "Size", "Shown by"].map((name) => el("th", { scope: "col" }, name)))),
              el(
                "tbody",
                {},
                home.bundles.map((bundle) =>
                  el(
                    "tr",
                    { "data-bundle": bundle.id },
                    el("td", { "data-label": "Role" }, bundle.role || "—", bundle.current ? el("small", { class: "note" }, " (current)") : null),
                    el("td", { "data-label": "Bundle" }, el("a", { href: "#/bundles/" + encodeURIComponent(bundle.id) }, el("code", {}, bundle.id.slice(0, 12)))),
                    el("td", { "data-label": "Made" }, bundle.modified_unix ? localTime(new Date(bundle.modified_unix * 1000).toISOString()) : "—"),
                    el("td", { "data-label": "Size" }, bytes(bundle.bytes)),
                    el("td", { "data-label": "Shown by" }, bundle.projections ? bundle.projections + " projection" + (bundle.projections === 1 ? "" : "s") : "—"),
                  ),
                ),
              ),
            )
          : el("p", { class: "empty" }, home.exists ? "No bundles yet." : "This home does not exist yet."),
        el("h3", {}, "Projections"),
        (home.projections || []).length
          ? el(
              "table",
              { id: "projections", class: "stack" },
              el("thead", {}, el("tr", {}, ["Folder", "Role", "Harnesses", "Bundle", "State"].map((name) => el("th", { scope: "col" }, name)))),
              el(
                "tbody",
                {},
                home.projections.map((projection) =>
                  el(
                    "tr",
                    {},
                    el("td", { "data-label": "Folder" }, el("code", {}, projection.target)),
                    el("td", { "data-label": "Role" }, projection.role),
                    el("td", { "data-label": "Harnesses" }, projection.layout),
                    el("td", { "data-label": "Bundle" }, el("code", {}, (projection.bundle || "").slice(0, 12))),
                    el("td", { "data-label": "State" }, projection.state),
                  ),
                ),
              ),
            )
          : el("p", { class: "empty" }, "No projections. ", el("code", {}, "acompose project"), " makes one."),
        el("h3", {}, "Store"),
        el("p", { id: "store" }, `${home.store.entries} entries, ${bytes(home.store.bytes)}.`),
        ].filter(Boolean),
      );
    });
  }

  function budgetBars(budget) {
    const rows = budget.providers || [];
    const total = Math.max(1, budget.total_bytes || 0);
    return el(
      "table",
      { id: "budget", class: "stack" },
      el("caption", {}, "Context budget: ", bytes(budget.total_bytes), ", about ", String(budget.total_tokens), " tokens"),
      el("thead", {}, el("tr", {}, ["Provider", "Skills", "Share", "Size"].map((name) => el("th", { scope: "col" }, name)))),
      el(
        "tbody",
        {},
        rows.map((row) => {
          const bar = el("span", {});
          bar.style.width = ((100 * (row.context_bytes || 0)) / total).toFixed(1) + "%";
          return el(
            "tr",
            {},
            el("td", { "data-label": "Provider" }, row.source),
            el("td", { "data-label": "Skills" }, String(row.skills)),
            el("td", { "data-label": "Share" }, el("span", { class: "bar", role: "img", "aria-label": Math.round((100 * (row.context_bytes || 0)) / total) + " percent" }, bar)),
            el("td", { "data-label": "Size" }, bytes(row.context_bytes), " · ~", String(row.approximate_tokens), " tokens"),
          );
        }),
      ),
    );
  }

  // The bundle's skills (the selection's selected skill decisions), filterable, each
  // with a Why button that asks the explorer below.
  function skillsTable(described, ask) {
    const skills = (described.selection || []).filter((decision) => decision.subject.startsWith("skill:") && decision.outcome === "selected");
    const rows = skills.map((decision) =>
      el(
        "tr",
        { "data-skill": decision.subject.slice("skill:".length) },
        el("td", { "data-label": "Skill" }, decision.subject.slice("skill:".length)),
        el("td", { "data-label": "From" }, el("code", {}, decision.source)),
        el("td", { "data-label": "Why" }, el("button", { type: "button", class: "clear why-skill", "aria-label": "Why " + decision.subject + "?", onclick: () => ask(decision.subject) }, "Why?")),
      ),
    );
    const count = el("p", { class: "note", id: "skills-count", role: "status" }, `${skills.length} skills.`);
    const filter = el("input", {
      type: "search",
      id: "skills-filter",
      placeholder: "part of a name or source",
      oninput: () => {
        const needle = filter.value.trim().toLowerCase();
        let shown = 0;
        for (const row of rows) {
          row.hidden = Boolean(needle) && !row.textContent.toLowerCase().includes(needle);
          if (!row.hidden) shown += 1;
        }
        count.textContent = needle ? `Showing ${shown} of ${skills.length} skills.` : `${skills.length} skills.`;
      },
    });
    return el(
      "section",
      { "aria-labelledby": "skills-heading" },
      el("h3", { id: "skills-heading" }, "Skills"),
      el("div", { class: "field" }, el("label", { for: "skills-filter" }, "Filter skills"), filter),
      count,
      skills.length
        ? el("table", { id: "skills", class: "stack" }, el("thead", {}, el("tr", {}, ["Skill", "From", "Why"].map((name) => el("th", { scope: "col" }, name)))), el("tbody", {}, rows))
        : el("p", { class: "empty" }, "This bundle holds no skill."),
    );
  }

  async function bundleView(id) {
    const target = el("div");
    const heading = el("h2", {}, "Bundle");
    show(heading, target);
    await guarded(target, async () => {
      const [described, people] = await Promise.all([api("GET", "/bundles/" + encodeURIComponent(id)), api("GET", "/people")]);
      heading.textContent = (described.display_name || described.role) + " — bundle";
      const warnings = (described.budget && described.budget.listing_warnings) || [];
      const whyResult = el("div", { id: "why-result" });
      // A decision's subject is already an item (`skill:NAME`, `source:ID`, …).
      const subjects = [...new Set((described.selection || []).map((decision) => decision.subject))].sort();
      const whyForm = el(
        "form",
        { id: "why-form" },
        el("h3", {}, "Why?"),
        el("div", { class: "field" }, el("label", { for: "why-item" }, "Skill, source, role or personality"), el("input", { type: "text", id: "why-item", list: "why-items", required: true, maxlength: 256, placeholder: "skill:estate-map" }), el("datalist", { id: "why-items" }, subjects.map((subject) => el("option", { value: subject })))),
        el("div", { class: "actions" }, el("button", { type: "submit", id: "ask-why" }, "Explain")),
        whyResult,
      );
      const ask = async (item) => {
        await guarded(whyResult, async () => {
          const answer = await api("GET", "/bundles/" + encodeURIComponent(described.bundle) + "/why?item=" + encodeURIComponent(item));
          whyResult.replaceChildren(
            el(
              "ol",
              { id: "why-answer" },
              (answer.entries || []).map((entry) =>
                el(
                  "li",
                  {},
                  el("strong", {}, entry.subject), " — ", entry.outcome, " from ", el("code", {}, entry.source), ": ", entry.reason,
                  el("small", { class: "details" }, entry.kind, " · ", entry.rule, entry.cause ? " · " + entry.cause : ""),
                  !entry.subject.startsWith("source:") && entry.source ? el("button", { type: "button", class: "clear follow", onclick: () => ask("source:" + entry.source) }, "Why source " + entry.source + "?") : null,
                ),
              ),
            ),
          );
        });
      };
      whyForm.addEventListener("submit", tracked(async (event) => {
        event.preventDefault();
        if (!whyForm.reportValidity()) return;
        await ask(whyForm.querySelector("#why-item").value.trim());
      }));
      const profile = described.profile || {};
      const asRole = { role: described.role, display_name: described.display_name, favorite_color: described.favorite_color, identity: profile.identity, personalities: profile.personalities, seats: profile.seats };
      const bound = (people.people || []).filter((person) => person.role === described.role && !person.archived);
      target.replaceChildren(
        el("ul", { class: "cards" }, roleCard(asRole, { id: described.bundle })),
        el("h3", {}, "People in this role"),
        bound.length
          ? el("ul", { class: "plain", id: "bundle-people" }, bound.map((person) => el("li", {}, el("a", { href: "#/people/" + encodeURIComponent(person.id), title: "Person id: " + person.id }, person.name))))
          : el("p", { class: "empty", id: "bundle-people" }, "No Person has this role yet."),
        skillsTable(described, ask),
        el("dl", { class: "fields" }, field("Bundle id", described.bundle), field("Person source", described.person_source), field("Personalities", described.meld)),
        el("h3", {}, "Providers"),
        el(
          "table",
          { id: "providers", class: "stack" },
          el("thead", {}, el("tr", {}, ["Provider", "Kind", "Scope", "Outcome", "Why"].map((name) => el("th", { scope: "col" }, name)))),
          el("tbody", {}, (described.providers || []).map((provider) => el("tr", {}, el("td", { "data-label": "Provider" }, provider.source), el("td", { "data-label": "Kind" }, provider.category), el("td", { "data-label": "Scope" }, provider.scope), el("td", { "data-label": "Outcome" }, provider.outcome), el("td", { "data-label": "Why" }, provider.reason)))),
        ),
        el("h3", {}, "Budget"),
        budgetBars(described.budget || {}),
        el("h3", {}, "Listing warnings"),
        warnings.length
          ? el("ul", { id: "listing-warnings" }, warnings.map((warning) => el("li", {}, warning.harness, ": the listing of ", bytes(warning.metadata_bytes), " is over its budget of ", String(warning.budget_characters), " characters", warning.cut.length ? "; it would cut " + warning.cut.join(", ") : "", ".")))
          : el("p", { id: "listing-warnings" }, "Every harness lists every skill of this bundle."),
        whyForm,
      );
    });
  }

  // ---------------------------------------------------------------------------------
  // Live state: the server pushes the versions of the sessions and of People whenever
  // they change (from this page, another tab, the cli or a process that ended); the view
  // on screen redraws what it shows.

  let onChange = null;
  // Counts navigations: a view that finishes loading after the reader moved on does not
  // take over what the new view listens for.
  let generation = 0;

  function follow(listener, mine) {
    if (mine === generation) onChange = listener;
  }

  // The view on screen redraws for a change; busy until it has.
  function changed(kinds) {
    if (onChange) tracked(onChange)(kinds);
  }
  const seen = { sessions: null, people: null };

  async function redraw(render) {
    refreshing = true;
    try {
      await render();
    } finally {
      refreshing = false;
    }
  }

  // ---------------------------------------------------------------------------------
  // The connection: lost when the events socket closes or a request cannot reach the
  // server. Until the socket is back the banner stays, the view cannot be used (inert:
  // no form can be filled against a server that is gone) and live states read
  // "unknown"; then the view redraws what it shows.

  let lost = false;
  let eventsSocket = null;
  const banner = () => document.getElementById("connection");

  function connectionLost() {
    if (lost) return;
    lost = true;
    banner().replaceChildren(
      el("strong", {}, "The acompose server cannot be reached."),
      " Nothing can be changed until it is back, and what is shown live may be out of date. The page tries again every 2 seconds; if the server was started again with a new address, open that address.",
    );
    banner().hidden = false;
    view().inert = true;
    document.body.dataset.live = "lost";
    for (const state of view().querySelectorAll(".presence, .session-status, #session-status, .run-status")) {
      state.textContent = "unknown";
      if (state.classList.contains("presence")) state.className = "presence presence-unknown";
    }
    // A request failed while the socket looked open: make the socket prove it.
    if (eventsSocket && eventsSocket.readyState === WebSocket.OPEN) eventsSocket.close();
  }

  function connectionBack() {
    if (!lost) return;
    lost = false;
    banner().hidden = true;
    banner().replaceChildren();
    view().inert = false;
    // A view that could not load is loaded again; any other redraws what is live.
    if (view().querySelector(".error[data-code=network]")) navigate();
    else changed(["sessions", "people"]);
  }

  function listen() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${window.location.host}/api/v1/events`, [TOKEN_PROTOCOL_PREFIX + token]);
    eventsSocket = socket;
    // Busy until the socket answers or fails.
    busy();
    let connecting = true;
    const answered = () => {
      if (connecting) done();
      connecting = false;
    };
    socket.addEventListener("message", (event) => {
      answered();
      let message = null;
      try {
        message = JSON.parse(event.data);
      } catch (_) {
        return;
      }
      if (!message || message.type !== "versions") return;
      const kinds = ["sessions", "people"].filter((kind) => seen[kind] !== null && seen[kind] !== message[kind]);
      seen.sessions = message.sessions;
      seen.people = message.people;
      document.body.dataset.live = "connected";
      if (lost) connectionBack();
      else if (kinds.length) changed(kinds);
    });
    socket.addEventListener("close", () => {
      answered();
      connectionLost();
      window.setTimeout(listen, 2000);
    });
  }

  // ---------------------------------------------------------------------------------
  // Routing by the address's fragment.

  let lastSection = null;

  // A view drawn for the address: busy until it and its requests are done, and the
  // navigations that led here with it.
  function navigate() {
    busy();
    for (; heldNavigations > 0; heldNavigations -= 1) done();
    tracked(route)();
    done();
  }

  function route() {
    const sectionNow = window.location.hash;
    // A message belongs to the screen it was said on; it survives only the redirect
    // that follows a save.
    if (lastSection !== null && !statusLine().dataset.keep) statusLine().textContent = "";
    delete statusLine().dataset.keep;
    lastSection = sectionNow;
    onChange = null;
    generation += 1;
    if (openSocket) {
      openSocket.close();
      openSocket = null;
    }
    const parts = (window.location.hash.replace(/^#\/?/, "") || "people").split("/").map(decodeURIComponent);
    const section = parts[0];
    for (const link of document.querySelectorAll("[data-nav]")) {
      const current = link.dataset.nav === (section === "people" && parts[1] === "new" ? "new" : section === "start" ? "people" : section === "bundles" ? "composition" : section);
      if (current) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (!token) {
      show(el("h2", {}, "Token needed"), el("p", {}, "Open the address that ", el("code", {}, "acompose serve"), " printed; it carries the token this page needs."));
      return;
    }
    if (section === "people" && parts[1] === "new") return create();
    if (section === "people" && parts[1] && parts[2] === "edit") return edit(parts[1]);
    if (section === "people" && parts[1]) return detail(parts[1]);
    if (section === "import") return importView();
    if (section === "swarm") return swarmView();
    if (section === "runs" && window.acomposeSwarm) return window.acomposeSwarm.route(parts);
    if (section === "start" && parts[1]) return startView(parts[1]);
    if (section === "projects") return projectsView();
    if (section === "world") return worldView();
    if (section === "composition") return compositionView();
    if (section === "bundles" && parts[1]) return bundleView(parts[1]);
    if (section === "sessions" && parts[1]) return sessionView(parts[1]);
    if (section === "sessions") return sessionsView();
    return roster();
  }

  // The helpers swarm.js builds its views with (swarm runs, resume).
  window.acompose = { api, el, show, say, guarded, reveal, field, errorBox, tracked, go, labelOf, localTime, dangerous, homeOverview, rolesByName, roleSwatch };

  window.addEventListener("hashchange", navigate);
  window.addEventListener("DOMContentLoaded", () => {
    navigate();
    if (token) listen();
  });
})();
