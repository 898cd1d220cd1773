// Swarm runs and resume on the People page: the run review and start under the swarm
// preview, the list of runs, one run with each role's terminal (opened, reopened and
// stopped through the sessions view), and the Resume button of a session whose runner
// keeps its conversation. Built with app.js's helpers; every value is set as text.
"use strict";
(() => {
  const { api, el, show, say, guarded, reveal, field, tracked, go, labelOf, localTime, dangerous, homeOverview, rolesByName, roleSwatch } = window.acompose;

  // A table that becomes stacked rows on a narrow screen, each cell under its column's
  // name (the heading's text), as the page's other tables do.
  function stacked(table) {
    table.classList.add("stack");
    const names = [...table.querySelectorAll("thead th")].map((heading) => heading.textContent);
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, index) => {
        if (cell.tagName === "TD" && names[index]) cell.dataset.label = names[index];
      });
    }
    return table;
  }

  // Under the preview: project and runner, Review run, then Start run.
  function startForm(recipe, assignments) {
    const box = el("section", { id: "run-start", "aria-labelledby": "run-start-heading" });
    const reviewBox = el("div", { id: "run-review" });
    box.append(el("h3", { id: "run-start-heading" }, "Start the run"));
    guarded(box, async () => {
      const [projects, runners] = await Promise.all([api("GET", "/projects"), api("GET", "/runners")]);
      const available = (runners.runners || []).filter((runner) => runner.available);
      const form = el(
        "form",
        { id: "run-form" },
        el("div", { class: "field" }, el("label", { for: "run-project" }, "Project"), el("select", { id: "run-project", required: true }, (projects.projects || []).map((project) => el("option", { value: project.id }, project.id)))),
        el("div", { class: "field" }, el("label", { for: "run-runner" }, "Runner of roles whose Person prefers none"), el("select", { id: "run-runner" }, available.map((runner) => el("option", { value: runner.name }, runner.name)))),
        el("div", { class: "actions" }, el("button", { type: "submit", id: "review-run" }, "Review run")),
      );
      const request = () => ({
        recipe_file_name: recipe.name,
        recipe: recipe.content,
        assignments,
        project_id: form.querySelector("#run-project").value,
        runner: form.querySelector("#run-runner").value,
      });
      form.addEventListener("submit", tracked(async (event) => {
        event.preventDefault();
        await guarded(reviewBox, async () => {
          const review = await api("POST", "/swarm/review", request());
          reveal(reviewBox, runReview(review, request));
        });
      }));
      box.append(form, reviewBox);
    });
    return box;
  }

  // A role's Person by name, the id in its tooltip; an ephemeral stand-in says so.
  function personOf(role) {
    if (!role.person_id) return "ephemeral";
    return el("span", { title: role.person_id }, (role.review || {}).person || role.person_id);
  }

  function runReview(review, request) {
    const result = el("div");
    const rows = (review.roles || []).map((role) => {
      const start = role.review || {};
      const sight = start.as_role;
      return el(
        "tr",
        { "data-role": role.role },
        el("th", { scope: "row" }, role.role),
        el("td", {}, personOf(role), " ", el("small", {}, "(", role.rule, ")")),
        el("td", {}, role.runner, " ", el("small", {}, "(", role.runner_from, ")")),
        el("td", {}, role.model || "default", " ", el("small", {}, "(", role.model_from, ")")),
        el("td", { class: "as-role" }, sight ? [sight.role, " — ", sight.identity, " (", sight.pronouns, "), bundle ", el("code", {}, sight.bundle), ", ", String((sight.skills || []).length), " skills"] : "host context"),
      );
    });
    // Limits a role's runner cannot enforce: Start run waits for the acknowledgement.
    const limits = (review.roles || []).flatMap((role) =>
      ((role.review || {}).unsupported_details || []).map((limit) => el("li", {}, el("strong", {}, role.role), " (", personOf(role), "): “", labelOf(limit.field), "” — ", limit.explanation)),
    );
    const box = limits.length ? el("input", { type: "checkbox", id: "acknowledge-run" }) : null;
    const start = el("button", {
      type: "button",
      id: "start-run",
      disabled: Boolean(box),
      onclick: async () => {
        await guarded(result, async () => {
          const body = request();
          body.acknowledge_unsupported = Boolean(box && box.checked);
          const run = await api("POST", "/swarm", body);
          go("#/runs/" + encodeURIComponent(run.id));
        });
      },
    }, "Start run");
    if (box) box.addEventListener("change", () => (start.disabled = !box.checked));
    return el(
      "section",
      { "aria-labelledby": "run-review-heading" },
      el("h3", { id: "run-review-heading" }, "Run review"),
      el("dl", { class: "fields" }, field("Run", review.run_id), field("Recipe", review.recipe), field("Project", review.project_id)),
      stacked(el(
        "table",
        { id: "run-roles" },
        el("thead", {}, el("tr", {}, ["Role", "Person", "Runner", "Model", "Works as"].map((name) => el("th", { scope: "col" }, name)))),
        el("tbody", {}, rows),
      )),
      limits.length ? [el("h4", {}, "Limits these runners cannot enforce"), el("ul", { id: "run-unsupported" }, limits)] : null,
      box ? el("div", { class: "field" }, el("label", { for: "acknowledge-run" }, box, " Start anyway: the limits above are not enforced")) : null,
      el("div", { class: "actions" }, start),
      result,
    );
  }

  async function runsView() {
    const target = el("div");
    show(el("h2", {}, "Runs"), target);
    await guarded(target, async () => {
      const listing = await api("GET", "/swarm");
      const runs = listing.runs || [];
      target.replaceChildren(
        runs.length
          ? stacked(el(
              "table",
              { id: "runs" },
              el("thead", {}, el("tr", {}, ["Run", "Recipe", "Project", "Roles", "Started"].map((name) => el("th", { scope: "col" }, name)))),
              el(
                "tbody",
                {},
                runs.map((run) =>
                  el(
                    "tr",
                    { "data-run": run.id },
                    el("td", {}, el("a", { href: "#/runs/" + encodeURIComponent(run.id) }, run.id)),
                    el("td", {}, run.recipe),
                    el("td", {}, run.project_id),
                    el("td", {}, (run.roles || []).map((role) => role.role).join(", ")),
                    el("td", {}, localTime(run.started_at)),
                  ),
                ),
              ),
            ))
          : el("p", { class: "empty" }, "No runs yet: start one from the Swarm tab."),
      );
    });
  }

  async function runView(id) {
    const target = el("div");
    show(el("h2", {}, "Run"), target);
    await guarded(target, async () => {
      const [run, home] = await Promise.all([api("GET", "/swarm/" + encodeURIComponent(id)), homeOverview()]);
      const roles = rolesByName(home);
      const result = el("div");
      const live = (run.roles || []).some((role) => role.session && role.session.live);
      const rows = (run.roles || []).map((role) => {
        const session = role.session || {};
        return el(
          "tr",
          { "data-role": role.role },
          el("th", { scope: "row" }, roleSwatch(roles, role.role), " ", role.role),
          el("td", {}, session.person || role.person_id || "temporary"),
          el("td", {}, role.runner),
          el("td", { class: "run-status" }, session.status || "no record"),
          el("td", {}, el("a", { class: "open-terminal", href: "#/sessions/" + encodeURIComponent(role.session_id) }, session.attachable ? "Open terminal" : "Session")),
        );
      });
      const stop = dangerous({ id: "stop-run", disabled: !live }, "Stop run", "Stop the whole run? Every role's session is ended.", async () => {
        await guarded(result, async () => {
          await api("POST", "/swarm/" + encodeURIComponent(id) + "/stop");
          say("Stopped the run.");
          await runView(id);
        });
      });
      target.replaceChildren(
        el("dl", { class: "fields" }, field("Run", run.id), field("Recipe", run.recipe), field("Project", run.project_id), field("Started", localTime(run.started_at))),
        stacked(el("table", { id: "run-sessions" }, el("thead", {}, el("tr", {}, ["Role", "Person", "Runner", "Status", "Terminal"].map((name) => el("th", { scope: "col" }, name)))), el("tbody", {}, rows))),
        el("div", { class: "actions" }, stop),
        result,
      );
    });
  }

  // On a session's screen: Resume, for an ended session that kept its conversation.
  function sessionActions(session, result) {
    if (!session.resumable) return null;
    return el("button", {
      type: "button",
      id: "resume",
      onclick: async () => {
        await guarded(result, async () => {
          const resumed = await api("POST", "/sessions/" + encodeURIComponent(session.id) + "/resume");
          go("#/sessions/" + encodeURIComponent(resumed.id));
        });
      },
    }, "Resume");
  }

  function route(parts) {
    if (parts[1]) return runView(parts[1]);
    return runsView();
  }

  window.acomposeSwarm = { startForm, sessionActions, route };
})();
