//! Chunk invariants and symbols for the first languages.

use super::check;
use crate::chunk::check_chunk_invariants;
use crate::chunk::syntax::{MAX_CHUNK_LINES, chunk_file};

#[test]
fn rust() {
    let text = r#"use std::fmt;

/// A runtime.
#[derive(Debug)]
pub struct Runtime {
    workers: usize,
}

impl Runtime {
    /// Runs a future to completion.
    pub fn block_on<F>(&self, f: F) -> F::Output {
        todo!()
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rt")
    }
}

pub trait Spawn {
    fn spawn(&self);
}

mod inner {
    pub fn helper() {}
}

macro_rules! ready { () => {} }
const LIMIT: usize = 4;
enum State { A, B }
"#;
    let chunked = check(
        "rust",
        text,
        &[
            ("Runtime", "struct"),
            ("Runtime", "impl"),
            ("Runtime::block_on", "method"),
            ("Runtime::fmt", "method"),
            ("Spawn", "trait"),
            ("inner", "module"),
            ("ready", "macro"),
            ("LIMIT", "const"),
            ("State", "enum"),
        ],
    );
    let runtime = chunked
        .symbols
        .iter()
        .find(|s| s.qualified == "Runtime" && s.kind == "struct")
        .unwrap();
    assert_eq!(
        runtime.start_line, 3,
        "doc comment and attribute belong to the struct"
    );
    let block_on = chunked
        .symbols
        .iter()
        .find(|s| s.name == "block_on")
        .unwrap();
    assert!(
        block_on
            .signature
            .starts_with("pub fn block_on<F>(&self, f: F) -> F::Output"),
        "{}",
        block_on.signature
    );
}

#[test]
fn definitions_nested_in_a_function_are_symbols_of_a_chunk_left_whole() {
    let mut text = String::from(
        "pub fn deserialize() {\n    struct Visitor;\n    impl Visitor {\n        fn visit(&self) {}\n    }\n    fn helper() {}\n",
    );
    // Long enough that a container would be split at its members.
    for i in 0..MAX_CHUNK_LINES {
        text.push_str(&format!("    let x{i} = {i};\n"));
    }
    text.push_str("}\n");
    let chunked = check(
        "rust",
        &text,
        &[
            ("deserialize", "function"),
            ("deserialize::Visitor", "struct"),
            ("deserialize::Visitor::visit", "method"),
            ("deserialize::helper", "function"),
        ],
    );
    assert!(chunked.chunks[0].text.contains("fn helper() {}"));
    assert!(chunked.chunks[0].text.contains("let x0 = 0;"));
    let python = "def outer(w):\n    def inner():\n        return w\n    return inner\n";
    let chunked = check("python", python, &[("outer.inner", "function")]);
    assert_eq!(chunked.chunks.len(), 1);
}

#[test]
fn python() {
    let text = r#"import os


class Session:
    """A session."""

    def request(self, method, url):
        return self.send(method, url)

    @property
    def closed(self):
        return False


def helper():
    pass
"#;
    check(
        "python",
        text,
        &[
            ("Session", "class"),
            ("Session.request", "method"),
            ("Session.closed", "method"),
            ("helper", "function"),
        ],
    );
}

#[test]
fn javascript() {
    let text = r#"import x from "y";

export function handleLogin(req) {
  return check(req);
}

const verify = (token) => token.length > 0;

class Auth {
  login(user) { return user; }
}
"#;
    check(
        "javascript",
        text,
        &[
            ("handleLogin", "function"),
            ("verify", "function"),
            ("Auth", "class"),
            ("Auth.login", "method"),
        ],
    );
}

#[test]
fn typescript_and_tsx() {
    let text = r#"export interface User {
  name: string;
  greet(): string;
}

export type Id = string;

export class Service {
  constructor(private db: Db) {}
  find(id: Id): User { return this.db.get(id); }
}

enum Color { Red, Green }

namespace Util {
  export function pad(s: string) { return s; }
}
"#;
    check(
        "typescript",
        text,
        &[
            ("User", "interface"),
            ("User.greet", "method"),
            ("Id", "type"),
            ("Service", "class"),
            ("Service.find", "method"),
            ("Color", "enum"),
            ("Util", "namespace"),
            ("Util.pad", "function"),
        ],
    );
    let tsx = r#"export function Button(props: Props) {
  return <button onClick={props.onClick}>{props.label}</button>;
}
"#;
    check("tsx", tsx, &[("Button", "function")]);
}

#[test]
fn go() {
    let text = r#"package server

// Server serves.
type Server struct {
	addr string
}

type Handler interface {
	Serve()
}

func (s *Server) ListenAndServe() error {
	return nil
}

func New(addr string) *Server {
	return &Server{addr: addr}
}
"#;
    check(
        "go",
        text,
        &[
            ("Server", "struct"),
            ("Handler", "interface"),
            ("Server.ListenAndServe", "method"),
            ("New", "function"),
        ],
    );
}

#[test]
fn java() {
    let text = r#"package a;

public class Cache {
    private int size;

    public Cache(int size) { this.size = size; }

    public int get(String key) {
        return key.length();
    }

    interface Loader { int load(String k); }
}
"#;
    check(
        "java",
        text,
        &[
            ("Cache", "class"),
            ("Cache.Cache", "constructor"),
            ("Cache.get", "method"),
            ("Cache.Loader", "interface"),
        ],
    );
}

#[test]
fn c() {
    let text = r#"#include <stdio.h>

struct point {
    int x, y;
};

static int add(int a, int b) {
    return a + b;
}

char *dup_string(const char *s) {
    return 0;
}
"#;
    check(
        "c",
        text,
        &[
            ("point", "struct"),
            ("add", "function"),
            ("dup_string", "function"),
        ],
    );
}

#[test]
fn cpp() {
    let text = r#"#include <vector>

namespace net {

class Socket {
public:
    void close() { fd_ = -1; }
private:
    int fd_;
};

template <typename T>
T max_of(T a, T b) { return a > b ? a : b; }

}

void net::Socket::reopen() {
}
"#;
    check(
        "cpp",
        text,
        &[
            ("net", "namespace"),
            ("net::Socket", "class"),
            ("net::Socket::close", "method"),
            ("net::max_of", "function"),
            ("net::Socket::reopen", "method"),
        ],
    );
}

#[test]
fn csharp() {
    let text = r#"using System;

namespace App {
    public class Repo {
        public Repo() {}
        public string Name { get; set; }
        public int Count(string q) { return 0; }
    }
}
"#;
    check(
        "csharp",
        text,
        &[
            ("App", "namespace"),
            ("App.Repo", "class"),
            ("App.Repo.Repo", "constructor"),
            ("App.Repo.Name", "property"),
            ("App.Repo.Count", "method"),
        ],
    );
}

#[test]
fn ruby() {
    let text = r#"require "json"

module Billing
  class Invoice
    def total
      42
    end

    def self.build
      new
    end
  end
end
"#;
    check(
        "ruby",
        text,
        &[
            ("Billing", "module"),
            ("Billing.Invoice", "class"),
            ("Billing.Invoice.total", "method"),
            ("Billing.Invoice.build", "method"),
        ],
    );
}

#[test]
fn php() {
    let text = r#"<?php
namespace App;

function helper() { return 1; }

class Mailer {
    public function send($to) {
        return true;
    }
}

trait Loggable {
    public function log() {}
}
"#;
    check(
        "php",
        text,
        &[
            ("helper", "function"),
            ("Mailer", "class"),
            ("Mailer::send", "method"),
            ("Loggable", "trait"),
            ("Loggable::log", "method"),
        ],
    );
}

#[test]
fn bash() {
    let text = r#"#!/bin/bash
set -e

# Deploys the app.
deploy() {
  echo deploying
}

function cleanup {
  rm -rf /tmp/x
}

deploy
"#;
    check(
        "bash",
        text,
        &[("deploy", "function"), ("cleanup", "function")],
    );
}

#[test]
fn markdown_splits_by_headings() {
    let text = "intro line\n\n# Install\n\nrun it\n\n## From source\n\n```\n# not a heading\n```\n\n# Usage\n\nuse it\n";
    let chunked = check(
        "markdown",
        text,
        &[
            ("Install", "section"),
            ("Install > From source", "section"),
            ("Usage", "section"),
        ],
    );
    assert_eq!(chunked.symbols.len(), 3);
    let install = &chunked.symbols[0];
    assert_eq!((install.start_line, install.end_line), (3, 12));
}

#[test]
fn huge_items_are_split_and_small_ones_merged() {
    let mut text = String::from("class Big:\n");
    for i in 0..40 {
        text.push_str(&format!("    def m{i}(self):\n        return {i}\n\n"));
    }
    text.push_str("\ndef huge():\n");
    for i in 0..300 {
        text.push_str(&format!("    x{i} = {i}\n"));
    }
    let chunked = check(
        "python",
        &text,
        &[
            ("Big", "class"),
            ("Big.m39", "method"),
            ("huge", "function"),
        ],
    );
    for chunk in &chunked.chunks {
        let lines = (chunk.end_line - chunk.start_line + 1) as usize;
        assert!(
            lines <= MAX_CHUNK_LINES,
            "chunk of {lines} lines: {:?}",
            chunk.symbol
        );
    }
    // Tiny methods are merged: far fewer chunks than methods.
    let method_chunks = chunked
        .chunks
        .iter()
        .filter(|c| c.symbol.as_deref().is_some_and(|s| s.starts_with("Big.")))
        .count();
    assert!(method_chunks < 20, "{method_chunks}");
    // The huge function is split into windows labelled with it.
    let huge = chunked
        .chunks
        .iter()
        .filter(|c| c.symbol.as_deref() == Some("huge"))
        .count();
    assert!(huge >= 5, "{huge}");
}

#[test]
fn broken_and_odd_inputs_still_cover_every_line() {
    for (language, text) in [
        ("rust", "fn a( {{{{ \n\n}} struct"),
        ("python", "def f(:\n  pass\n\tclass"),
        ("javascript", "function a() { function b() { function c() {"),
        ("go", ""),
        ("c", "\n\n\n"),
        ("cpp", "int a; int b; void f() {} void g() {}"),
        ("markdown", "# only heading"),
        ("ruby", "end end end"),
    ] {
        let chunked = chunk_file(language, text);
        check_chunk_invariants(text, &chunked.chunks);
    }
    // Deep nesting does not overflow anything.
    let deep = format!("x = {}1{}\n", "[".repeat(5000), "]".repeat(5000));
    check_chunk_invariants(&deep, &chunk_file("python", &deep).chunks);
}
