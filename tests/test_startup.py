"""What the library's own interpreter imports at start-up (shim/embedded.py).

dnspython's ``dns._features`` asks for the versions of optional packages
through ``importlib.metadata``; in the library's interpreter a stand-in
answers from the dist-info folders on ``sys.path``.  Its answers must be
importlib.metadata's own, for every feature dnspython knows, whether the
package is absent, too old or new enough, and the real module must still
work for anyone who wants it.
"""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = """
import json, sys
sys.path[:0] = {path!r}
if {stand_in!r}:
    import shim.embedded
    shim.embedded.answer_feature_checks()
import dns._features
answers = {{f: dns._features.have(f) for f in sorted(dns._features._requirements)}}
metadata = sys.modules.get("importlib.metadata")
real_loaded = metadata.__dict__.get("__file__") is not None
import importlib.metadata
print(json.dumps({{"answers": answers, "real_loaded_by_features": real_loaded,
                  "dnspython": importlib.metadata.version("dnspython"),
                  "distributions": sum(1 for _ in importlib.metadata.distributions()) > 0}}))
"""


def _feature_run(extra_path, stand_in):
    path = [str(ROOT), *[p for p in sys.path if p.endswith("site-packages")], *extra_path]
    result = subprocess.run([sys.executable, "-I", "-S", "-c",
                             SCRIPT.format(path=path, stand_in=stand_in)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _dist_info(folder, name, version):
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.parametrize("installed", [[], [("idna", "3.20")], [("idna", "3.1")],
                                       [("idna", "4.0"), ("cryptography", "50.1"), ("trio", "0.1")]],
                         ids=["none", "idna-new-enough", "idna-too-old", "several"])
def test_feature_answers_are_importlib_metadata_answers(tmp_path, installed):
    for name, version in installed:
        _dist_info(tmp_path / "site", name, version)
    extra = [str(tmp_path / "site")] if installed else []
    ours = _feature_run(extra, stand_in=True)
    theirs = _feature_run(extra, stand_in=False)
    assert ours["answers"] == theirs["answers"]
    assert not ours["real_loaded_by_features"], "dns._features imported importlib.metadata"
    assert theirs["real_loaded_by_features"]
    # The real module still serves whoever wants it afterwards.
    assert ours["dnspython"] == theirs["dnspython"] and ours["distributions"]
    if ("idna", "3.20") in installed:
        assert ours["answers"]["idna"] is True
    if ("idna", "3.1") in installed or not installed:
        assert ours["answers"]["idna"] is False
