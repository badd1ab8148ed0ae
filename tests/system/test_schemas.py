"""The contracts in schemas/ are valid, agree with the code, and cannot drift:
- every schema is valid JSON Schema 2020-12, the OpenAPI document is OpenAPI 3.1;
- the OpenAPI paths are exactly the routes rocefabd serves, and the README's REST table is one
  table naming them all;
- the report JSON Schema and rocefabd's C validator give the same verdicts on the same
  documents (except the documented cross-field rules JSON Schema cannot express);
- what rocefab-agent --once prints validates against the report schema, for every tree.
"""
import glob
import json
import os
import subprocess

import jsonschema
import yaml

from conftest import HOSTS, ROOT, SCHEMAS, binary

REPORTS = os.path.join(ROOT, "tests", "data", "reports")


def load(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


def report_validator():
    return jsonschema.Draft202012Validator(load("agent-report.schema.json"))


def test_schemas_are_valid():
    for name in ("agent-report.schema.json", "command.schema.json"):
        jsonschema.Draft202012Validator.check_schema(load(name))
    with open(os.path.join(SCHEMAS, "openapi.yaml")) as f:
        doc = yaml.safe_load(f)
    assert doc["openapi"].startswith("3.1")
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_registry_is_consistent():
    reg = load("counters.json")
    names = [c["name"] for c in reg["counters"]]
    assert len(names) == len(set(names))
    for c in reg["counters"]:
        assert c["scope"] in ("port", "port_prio", "queue", "qp")
        for s in c["sources"]:
            assert ("%d" in s["name"]) == (c["scope"] == "port_prio"), c["name"]
        if c["unit"] == "microseconds":
            assert c["name"].endswith("_us")
    # the registry the daemon serves is this file
    out = subprocess.run([binary("rocefabd"), "--version"], capture_output=True, text=True)
    assert out.returncode == 0


def test_openapi_lists_exactly_the_routes():
    out = subprocess.run([binary("rocefabd"), "--routes"], capture_output=True, text=True,
                         check=True).stdout
    served = set()
    for line in out.splitlines():
        method, pattern = line.split()[:2]
        served.add((method.lower(), pattern))
    with open(os.path.join(SCHEMAS, "openapi.yaml")) as f:
        doc = yaml.safe_load(f)
    documented = {(m, p) for p, ops in doc["paths"].items() for m in ops
                  if m in ("get", "put", "post", "delete", "patch")}
    assert served == documented, f"served only: {served - documented}; documented only: {documented - served}"


def test_openapi_query_parameters_are_the_routes():
    """Each operation's query parameters in the OpenAPI document are exactly those its route
    takes (rocefabd --routes prints them; any other is refused with UNKNOWN_PARAMETER)."""
    import re
    out = subprocess.run([binary("rocefabd"), "--routes"], capture_output=True, text=True,
                         check=True).stdout
    served = {}
    for line in out.splitlines():
        method, pattern = line.split()[:2]
        m = re.search(r"\(query: ([a-z_, ]+)\)$", line)
        served[(method.lower(), pattern)] = set(m.group(1).split(", ")) if m else set()
    with open(os.path.join(SCHEMAS, "openapi.yaml")) as f:
        doc = yaml.safe_load(f)
    for path, ops in doc["paths"].items():
        if path == "/":
            continue  # the dashboard's files: any query
        for method, op in ops.items():
            if method not in ("get", "put", "post", "delete", "patch"):
                continue
            params = [doc["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
                      for p in op.get("parameters", []) + ops.get("parameters", [])]
            documented = {p["name"] for p in params if p.get("in") == "query"}
            assert documented == served[(method, path)], \
                f"{method.upper()} {path}: documented {sorted(documented)}, served {sorted(served[(method, path)])}"


def test_readme_rest_table_is_whole_and_lists_every_route():
    """The README's REST table is one table (a blank line once cut it in two, and the rows
    after it rendered as loose text) and names every route rocefabd serves."""
    import re
    out = subprocess.run([binary("rocefabd"), "--routes"], capture_output=True, text=True,
                         check=True).stdout
    served = {tuple(l.split()[:2]) for l in out.splitlines()}
    takes = {tuple(l.split()[:2]): set(re.findall(r"\(query: ([a-z_, ]+)\)$", l)[0].split(", "))
             for l in out.splitlines() if l.endswith(")") and "(query: " in l}
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("\n## REST API (v1)\n", 1)[1].split("\n## ", 1)[0]
    lines = section.split("\n### ", 1)[0].splitlines()  # up to the first subsection
    rows = [i for i, l in enumerate(lines) if l.startswith("|")]
    assert rows and rows == list(range(rows[0], rows[-1] + 1)), "the REST table is cut"
    assert lines[rows[0] + 1].startswith("|---")
    documented = set()
    for i in rows[2:]:
        first = lines[i].split(" | ")[0]
        methods = set(re.findall(r"\b(GET|PUT|POST|DELETE)\b", first))
        prev = None
        spans = re.findall(r"`([^`]*)`", first)
        for path in [m for sp in spans for m in re.findall(r"(?:^|\s)(/\S*)", sp)]:
            named = set(re.findall(r"[?&\[]+([a-z_]+)=", path))
            path = re.split(r"[?\[]", path)[0].replace("{DEVICE:PORT}", "{port}")
            cands = [path, "/api/v1" + path] + ([prev.rsplit("/", 1)[0] + path] if prev else [])
            hit = next((c for c in cands if any((m, c) in served for m in methods)), None)
            assert hit, f"README row names {path!r}, which rocefabd does not serve: {lines[i]}"
            documented |= {(m, hit) for m in methods if (m, hit) in served}
            if "GET" in methods:  # the row names the query parameters the route takes
                assert named == takes.get(("GET", hit), set()), \
                    f"README row for {hit} names the query parameters {sorted(named)}, " \
                    f"rocefabd takes {sorted(takes.get(('GET', hit), set()))}"
            prev = hit
    assert served <= documented, f"routes missing from the README's table: {sorted(served - documented)}"


def strict_load(path):
    """JSON with duplicate keys rejected, as jansson does."""
    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)
    with open(path) as f:
        return json.loads(f.read(), object_pairs_hook=no_dups)


def c_verdicts(files):
    out = subprocess.run([binary("rocefabd"), "--validate-report"] + files, capture_output=True,
                         text=True).stdout
    verdicts = {}
    for line in out.splitlines():
        path, verdict = line.split(": ", 2)[:2]
        verdicts[path] = verdict
    return verdicts


def test_good_reports_pass_both_validators():
    files = sorted(glob.glob(os.path.join(REPORTS, "good", "*.json")))
    assert len(files) >= 4
    v = report_validator()
    verdicts = c_verdicts(files)
    for f in files:
        v.validate(strict_load(f))
        assert verdicts[f] == "ok", f


def test_bad_reports_fail_both_validators():
    v = report_validator()
    expectations = []
    with open(os.path.join(REPORTS, "bad", "expectations.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, code, pointer, schema_verdict = line.rstrip("\n").split("\t")
            expectations.append((os.path.join(REPORTS, "bad", name), code, pointer, schema_verdict))
    verdicts = c_verdicts([e[0] for e in expectations])
    for path, code, pointer, schema_verdict in expectations:
        assert verdicts[path] == "invalid", path
        try:
            doc = strict_load(path)
        except ValueError:
            assert code == "BAD_JSON", path
            continue
        errors = list(v.iter_errors(doc))
        if schema_verdict == "invalid":
            assert errors, f"{path}: the JSON Schema accepts it"
        else:
            # cross-field rules (a sample's port must be in the inventory, no duplicates)
            assert not errors, f"{path}: expected only rocefabd to reject it"


def test_agent_once_output_validates(tmp_path):
    v = report_validator()
    for tree in sorted(os.listdir(HOSTS)):
        if not os.path.isdir(os.path.join(HOSTS, tree)):
            continue
        out = subprocess.run([binary("rocefab-agent"), "--once", "--id", tree, "--sysfs-root",
                              os.path.join(HOSTS, tree)], capture_output=True, text=True, check=True)
        doc = json.loads(out.stdout)
        v.validate(doc)
        assert doc["samples"], tree
        path = tmp_path / f"{tree}.json"
        path.write_text(out.stdout)
        assert c_verdicts([str(path)])[str(path)] == "ok"


def test_every_option_of_a_program_is_in_its_man_page():
    """Each long option a program's --help lists is in its man page (rocefab-agent's -L,
    --dump-config and -V, five of rocefab-sim's and rocefab-probe's were missing)."""
    import re
    man = {"rocefabd": "rocefabd.8", "rocefabctl": "rocefabctl.1", "rocefab-agent": "rocefab-agent.8",
           "rocefab-probe": "rocefab-probe.1", "rocefab-sim": "rocefab-sim.1"}
    for prog, page in man.items():
        text = ""
        for args in (["--help"], ["serve", "--help"]) if prog == "rocefab-sim" else (["--help"],):
            r = subprocess.run([binary(prog)] + args, capture_output=True, text=True, timeout=10)
            text += r.stdout + r.stderr
        opts = set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z][a-z-]+)", text))
        assert len(opts) > 3, (prog, text)
        with open(os.path.join(ROOT, "packaging", "man", page)) as f:
            body = f.read().replace("\\-", "-")
        missing = sorted(o for o in opts if o not in body)
        assert not missing, (page, missing)
