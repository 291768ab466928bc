//! The end-to-end tests of the `rein` binary, in one test binary: every module runs the real
//! `rein` (exec, app-server, acp, mock-model, replay) as a child process, with the shared
//! harness in the `rein-test-support` crate. One binary links the tree once instead of once
//! per file (see CONTRIBUTING.md).
//!
//! A new end-to-end test file: add `tests/e2e/NAME.rs` and one `mod NAME;` line below.
//! Run one module with `cargo test -p rein-cli --test e2e -- NAME::`.

// Test code: a panic (unwrap, expect) is how a test fails, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod acp_client_fs;
mod acp_client_fs_ts;
mod acp_goal;
mod acp_hostile;
mod acp_mcp;
mod acp_py_client;
mod acp_ts_sdk;
mod acp_turns;
mod advisor_e2e;
mod app_server_agents;
mod app_server_agents_kill;
mod app_server_approvals;
mod app_server_bad_input;
mod app_server_codex_tui;
mod app_server_history;
mod app_server_ide;
mod app_server_races;
mod app_server_schema_drift;
mod app_server_table_drift;
mod app_server_tool_items;
mod app_server_turns;
mod app_server_ws;
mod app_server_ws_guard;
mod app_server_ws_lag;
mod codex_tui;
mod config_policies;
mod crash_matrix;
mod exec_agents;
mod exec_demo;
mod exec_interrupt;
mod exec_mock;
mod exec_sdk;
mod exec_sessions;
mod exec_setup;
mod full_disk;
mod goals;
mod goals_app_server;
mod goals_auto_resume;
mod goals_more;
mod goals_subagents;
mod goals_verifiers;
mod goals_wire;
mod hooks;
mod hooks_app_server;
mod hooks_session;
mod hooks_tools;
mod hostile_inputs;
mod hostile_sandbox;
mod hostile_sessions;
mod idle_threads;
mod mcp_app_server;
mod mcp_exec;
mod mcp_hostile;
mod memory;
mod memory_consolidate;
mod memory_end;
mod memory_extract;
mod memory_lifecycle;
mod memory_mode;
mod model_policy;
mod project_context;
mod replay_e2e;
mod replay_hostile;
mod replay_live;
mod sandbox_launch;
mod sandbox_startup;
mod serve_agent_protocol;
mod serve_agent_protocol_approvals;
mod serve_chat;
mod serve_durable;
mod serve_guard;
mod serve_langgraph_py;
mod serve_openai_js;
mod serve_openai_py;
mod serve_responses;
mod serve_stateless;
mod skills_activation;
mod skills_allowed_tools;
mod skills_config;
mod skills_extra_roots;
mod skills_fork;
mod skills_implicit;
mod skills_mcp_dependency;
mod skills_scale;
mod task_graph;
mod task_graph_fronts;
mod task_graph_retries;
mod task_graph_strategy;
mod trajectory_e2e;
