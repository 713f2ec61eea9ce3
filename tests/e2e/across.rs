//! One query across projects (`projects` on `search` and `usages`) through the real shim and
//! daemon: a service and its client library, two projects of one daemon.

use std::path::{Path, PathBuf};

use amanmcp_tests::{Shim, TestEnv, result_paths};
use serde_json::{Value, json};

const SERVICE_PY: &str = "def issue_refund(order_id, amount):
    \"\"\"Give the customer their money back.\"\"\"
    ledger.credit(order_id, amount)
";

const CLIENT_PY: &str = "from service import issue_refund


def refund_order(order):
    return issue_refund(order.id, order.total)
";

/// The two projects: a service, and a client library calling it.
fn service_and_client(env: &TestEnv) -> (PathBuf, PathBuf) {
    let service = env.project("service", &[("billing/refunds.py", SERVICE_PY)]);
    let client = env.project("client", &[("sdk/orders.py", CLIENT_PY)]);
    (service, client)
}

/// A shim on `root`, its index ready: a search for `query` finds `path`.
fn ready_shim(env: &TestEnv, root: &Path, query: &str, path: &str) -> Shim {
    let mut shim = Shim::start(env, root);
    shim.initialize();
    shim.search_until(query, path);
    shim
}

fn structured(reply: &Value) -> &Value {
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    &reply["result"]["structuredContent"]
}

#[test]
fn search_and_usages_reach_the_other_indexed_projects_when_asked() {
    let env = TestEnv::new();
    let (service, client) = service_and_client(&env);
    let _on_service = ready_shim(&env, &service, "issue_refund", "billing/refunds.py");
    let mut shim = ready_shim(&env, &client, "refund_order", "sdk/orders.py");
    let service_root = service.to_str().unwrap();
    let client_root = client.to_str().unwrap();

    // Alone, the client project knows only its own code.
    let reply = shim.call_tool(
        "search",
        json!({"query": "issue_refund", "mode": "lexical"}),
    );
    assert_eq!(result_paths(&reply), ["sdk/orders.py"], "{reply}");

    // Across every project: the definition in the service too, each result with its project.
    for projects in [json!(["all"]), json!([service_root])] {
        let reply = shim.call_tool(
            "search",
            json!({"query": "issue_refund", "mode": "lexical", "projects": projects}),
        );
        let results = structured(&reply)["results"].as_array().unwrap().clone();
        let place = |r: &Value| {
            (
                r["project"].as_str().unwrap_or_default().to_string(),
                r["path"].as_str().unwrap().to_string(),
            )
        };
        let places: Vec<_> = results.iter().map(place).collect();
        assert!(
            places.contains(&(service_root.into(), "billing/refunds.py".into())),
            "{projects}: {reply}"
        );
        assert!(
            places.contains(&(client_root.into(), "sdk/orders.py".into())),
            "{projects}: {reply}"
        );
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("{service_root}: billing/refunds.py:1-3")),
            "{text}"
        );
    }

    // Usages: the asking project's first, then the service's definition.
    let reply = shim.call_tool(
        "usages",
        json!({"name": "issue_refund", "projects": ["all"]}),
    );
    let found = structured(&reply);
    assert_eq!(found["total"], 3, "{reply}");
    assert_eq!(found["definitions"], 1, "{reply}");
    let usages: Vec<(String, String, u64, bool)> = found["usages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["project"].as_str().unwrap().to_string(),
                u["path"].as_str().unwrap().to_string(),
                u["line"].as_u64().unwrap(),
                u["definition"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        usages,
        [
            (client_root.into(), "sdk/orders.py".into(), 1, false),
            (client_root.into(), "sdk/orders.py".into(), 5, false),
            (service_root.into(), "billing/refunds.py".into(), 1, true),
        ],
        "{reply}"
    );

    // Only projects this daemon has indexed can be named; the argument's shape is checked.
    let elsewhere = env.project("never-indexed", &[("x.py", "def issue_refund(): pass\n")]);
    for (projects, says) in [
        (
            json!([elsewhere.to_str().unwrap()]),
            "not a project this daemon has indexed",
        ),
        (
            json!(["/nonexistent/place"]),
            "not a project this daemon has indexed",
        ),
        (json!("all"), "must be an array"),
        (json!([7]), "must be an array"),
    ] {
        for tool in ["search", "usages"] {
            let args = match tool {
                "search" => json!({"query": "issue_refund", "projects": projects}),
                _ => json!({"name": "issue_refund", "projects": projects}),
            };
            let reply = shim.call_tool(tool, args.clone());
            assert_eq!(reply["result"]["isError"], json!(true), "{args} -> {reply}");
            let text = reply["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains(says), "{args} -> {text}");
        }
    }
}

#[test]
fn amanctl_lists_indexed_projects_and_forgets_them() {
    let env = TestEnv::new();
    let (service, client) = service_and_client(&env);
    for root in [&service, &client] {
        let ran = env.amanctl_on(root, &["index"]);
        assert!(ran.ok(), "{}", ran.text());
    }
    let listed = |env: &TestEnv| -> Vec<Value> {
        let ran = env.amanctl(&["projects", "--json"]);
        assert!(ran.ok(), "{}", ran.text());
        let parsed: Value = serde_json::from_str(&ran.stdout).unwrap();
        parsed["projects"].as_array().unwrap().clone()
    };
    let projects = listed(&env);
    let roots: Vec<&str> = projects
        .iter()
        .map(|p| p["root"].as_str().unwrap())
        .collect();
    assert_eq!(
        roots,
        [client.to_str().unwrap(), service.to_str().unwrap()],
        "{projects:?}"
    );
    assert!(
        projects
            .iter()
            .all(|p| p["bytes"].as_u64().unwrap() > 0 && p["loaded"] == true),
        "{projects:?}"
    );
    let text = env.amanctl(&["projects"]);
    assert!(
        text.stdout.contains(service.to_str().unwrap()),
        "{}",
        text.text()
    );

    // The client's checkout is deleted: listed as missing, then dropped by `gc`.
    std::fs::remove_dir_all(&client).unwrap();
    let projects = listed(&env);
    let gone = projects
        .iter()
        .find(|p| p["root"] == client.to_str().unwrap())
        .unwrap();
    assert_eq!(gone["root_exists"], false, "{gone}");
    let ran = env.amanctl(&["gc", "--json"]);
    assert!(ran.ok(), "{}", ran.text());
    let reply: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        reply["forgotten"],
        json!([client.to_str().unwrap()]),
        "{reply}"
    );
    assert!(reply["bytes_freed"].as_u64().unwrap() > 0, "{reply}");
    let projects = listed(&env);
    assert_eq!(projects.len(), 1, "{projects:?}");

    // Forgetting a loaded project unloads it and drops its index; using it again indexes it
    // again from scratch.
    let ran = env.amanctl(&["projects", "forget", service.to_str().unwrap()]);
    assert!(ran.ok() && ran.stdout.contains("forgot"), "{}", ran.text());
    assert!(listed(&env).is_empty());
    let ran = env.amanctl(&["projects", "forget", service.to_str().unwrap()]);
    assert!(!ran.ok() && ran.text().contains("not a project this daemon has indexed"));
    let ran = env.amanctl_on(&service, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.verify_ok(&service, "after forgetting and indexing again");
    let ran = env
        .command("amanctl")
        .args(["search", "--mode", "lexical", "issue_refund"])
        .arg(&service)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("billing/refunds.py"),
        "{ran:?}"
    );
}

#[test]
fn an_indexed_root_replaced_by_a_symlink_is_not_followed_by_all() {
    let env = TestEnv::new();
    let (service, client) = service_and_client(&env);
    let secret = env.project(
        "never-indexed",
        &[("notes.py", "def issue_refund_private_notes():\n    pass\n")],
    );
    drop(ready_shim(
        &env,
        &service,
        "issue_refund",
        "billing/refunds.py",
    ));
    let mut shim = ready_shim(&env, &client, "refund_order", "sdk/orders.py");
    // The service's checkout is swapped for a symlink to a directory nobody indexed.
    std::fs::rename(&service, env.path().join("service-moved")).unwrap();
    std::os::unix::fs::symlink(&secret, &service).unwrap();
    let reply = shim.call_tool(
        "search",
        json!({"query": "issue_refund_private_notes", "mode": "lexical", "projects": ["all"]}),
    );
    let text = reply.to_string();
    assert!(!text.contains("notes.py"), "{text}");
    let reply = shim.call_tool(
        "search",
        json!({"query": "refund", "mode": "lexical", "projects": [service.to_str().unwrap()]}),
    );
    assert!(!reply.to_string().contains("notes.py"), "{reply}");
    let roots = env.amanctl(&["projects"]);
    assert!(
        !roots.stdout.contains("never-indexed"),
        "the symlink's target became a project: {}",
        roots.text()
    );
}

#[test]
fn callers_reach_a_client_project_when_asked() {
    let env = TestEnv::new();
    let (service, client) = service_and_client(&env);
    let _on_client = ready_shim(&env, &client, "refund_order", "sdk/orders.py");
    let mut shim = ready_shim(&env, &service, "issue_refund", "billing/refunds.py");
    let client_root = client.to_str().unwrap();

    // Alone, the service has no caller of its function.
    let reply = shim.call_tool("callers", json!({"symbol": "issue_refund"}));
    assert_eq!(structured(&reply)["links"], json!([]), "{reply}");
    // With the client: its call, which the client cannot resolve itself, with its project.
    let reply = shim.call_tool(
        "callers",
        json!({"symbol": "issue_refund", "projects": ["all"]}),
    );
    let links = structured(&reply)["links"].as_array().unwrap().clone();
    assert_eq!(links.len(), 1, "{reply}");
    assert_eq!(links[0]["project"], json!(client_root), "{reply}");
    assert_eq!(
        links[0]["from"],
        json!("sdk/orders.py:4 refund_order"),
        "{reply}"
    );
    assert_eq!(links[0]["label"], json!("unresolved"), "{reply}");
    // Only `callers` looks into other projects.
    let reply = shim.call_tool(
        "callees",
        json!({"symbol": "issue_refund", "projects": ["all"]}),
    );
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
}
