"""``kppca sample --report`` (issue 43): it compares with digits of the classes generated, caps its judges' training
set and prints its own time."""

from __future__ import annotations

import importlib

import numpy as np

from kppca.cli.commands import sample
from kppca.cli.main import main

TINY = ["--digits", "0", "1", "--n-train", "40", "--n-components", "2", "--no-progress", "--threads", "1"]


def test_report_compares_with_the_class_asked_for_and_caps_its_judges(monkeypatch, capsys, tmp_path):
    metrics = importlib.import_module("kppca.metrics")
    quality_module = importlib.import_module("kppca.metrics.sample_quality")
    features_module = importlib.import_module("kppca.metrics.digit_features")
    monkeypatch.setattr(features_module, "_TRAINED", {})
    fit_classifier, quality = quality_module._fit_default_classifier, metrics.sample_quality
    judged, compared = [], []

    def spy_classifier(X, y):
        judged.append(np.asarray(y))
        return fit_classifier(X, y)

    def spy_quality(S, reference, labels, **kwargs):
        compared.append((np.asarray(labels), np.asarray(kwargs["train"])))
        return quality(S, reference, labels, **kwargs)

    monkeypatch.setattr(quality_module, "_fit_default_classifier", spy_classifier)
    monkeypatch.setattr(metrics, "sample_quality", spy_quality)
    monkeypatch.setattr(sample, "REPORT_ROWS", 300)  # below the 4,960 bundled digits held out
    argv = ["sample", "--digit-class", "1", "--n-samples", "8", "--report", "--out", str(tmp_path / "s.npy"), *TINY]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (judge_labels,), ((labels, train),) = judged, compared
    assert len(judge_labels) == 300 and set(judge_labels.tolist()) == set(range(10))  # capped; every digit seen
    assert set(labels.tolist()) == {1} and len(labels) == 300  # held-out 1s only (capped as well)
    assert len(train) == 20  # the 20 training 1s of the 40 (--n-train takes the classes in proportion)
    assert "of class(es) 1 (the classes generated)" in out
    assert "trained on 300 of the" in out and "(capped at 300" in out
    assert "--report took " in out and out.index("--report took") > out.index("wrote ")
