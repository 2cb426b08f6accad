"""Survey schema, validation and summaries.

The fixture tests/fixtures/survey_example.csv is invented (its first line says so); the expected counts below
were tallied by hand from that file, not from the paper.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from academic_bench.analysis import survey

FIXTURE = Path(__file__).parent / "fixtures" / "survey_example.csv"


def _write(tmp_path: Path, df: pd.DataFrame) -> Path:
    path = tmp_path / "export.csv"
    df.to_csv(path, index=False)
    return path


def _raw_fixture() -> pd.DataFrame:
    return pd.read_csv(FIXTURE, skiprows=1, dtype=str, keep_default_na=False)  # skip the comment line


def test_schema_has_34_named_columns() -> None:
    cols = survey.SURVEY_COLUMNS
    assert len(cols) == len(set(cols)) == 34
    assert cols[:5] == ("role", "areas", "uses", "satisfaction", "cloud_budget")
    assert cols[-2:] == ("gpu_link", "node_link")
    assert "data_center_64gpu" in cols and "workstation_mem" in cols and "desktop_gen" in cols
    assert len(survey.AVAILABILITY_COLUMNS) == 3 * 7


def test_questionnaire_matches_schema() -> None:
    q = survey.load_questionnaire()
    assert q["source"] == "paper Appendix A, Table 2"
    questions = {item["id"]: item for item in q["questions"]}
    assert list(questions) == [f"Q{i}" for i in range(1, 20)]
    assert questions["Q15"]["type"] == "grid"
    assert questions["Q15"]["choices"] == ["N/A", "Hours", "Days", "Weeks", "Months", "Indefinitely"]
    assert questions["Q16"]["choices"] == ["No", "Not sure", "NVLink", "NVSwitch", "AMD Infinity Fabric"]
    mapped = [c for item in q["questions"] for c in ([item["column"]] if item["column"] else item.get("columns", []))]
    assert sorted(mapped) == sorted(survey.SURVEY_COLUMNS)


def test_paper_aggregates_carry_sources() -> None:
    agg = survey.load_paper_aggregates().set_index("key")
    assert agg["source"].str.len().gt(0).all()
    assert agg.loc["respondents", "value"] == 50  # Sec. 2
    assert agg.loc["share_inter_gpu_link", "value"] == 0.70  # Figure 8 caption
    assert agg.loc["share_zero_cloud_budget", "value"] == 0.85  # Sec. 2


def test_fixture_loads_and_is_marked_invented() -> None:
    assert "INVENTED" in FIXTURE.read_text(encoding="utf-8").splitlines()[0]
    df = survey.load_survey(FIXTURE)
    assert df.shape == (20, 34)
    assert isinstance(df["data_center_4gpu"].dtype, pd.CategoricalDtype)
    # Row 17 leaves its grid blank; blanks read as N/A.
    assert (df.loc[16, list(survey.AVAILABILITY_COLUMNS)] == "N/A").all()


def test_missing_and_unknown_columns_are_named(tmp_path: Path) -> None:
    raw = _raw_fixture().drop(columns=["node_link", "data_center_8gpu"]).assign(favourite_gpu="A100")
    with pytest.raises(ValueError) as err:
        survey.load_survey(_write(tmp_path, raw))
    msg = str(err.value)
    assert "missing column(s): data_center_8gpu, node_link" in msg
    assert "unknown column(s): favourite_gpu" in msg


def test_bad_cells_are_reported_with_row_numbers(tmp_path: Path) -> None:
    raw = _raw_fixture()
    raw.loc[2, "data_center_1gpu"] = "Forever"
    raw.loc[4, "satisfaction"] = "7"
    raw.loc[5, "cloud_budget"] = "lots"
    with pytest.raises(ValueError) as err:
        survey.load_survey(_write(tmp_path, raw))
    msg = str(err.value)
    assert "3 invalid cell(s)" in msg
    # Data row 3 sits on file line 4 (line 1 is the header).
    assert "row 3 (line 4), column data_center_1gpu: 'Forever'" in msg
    assert "row 5 (line 6), column satisfaction: '7'" in msg
    assert "row 6 (line 7), column cloud_budget: 'lots'" in msg


def test_row_numbers_count_the_comment_header(tmp_path: Path) -> None:
    # The fixture's first line is a comment, so data row 1 is file line 3.
    path = tmp_path / "commented.csv"
    path.write_text(FIXTURE.read_text(encoding="utf-8").replace("Days", "Dayz", 1), encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1 \(line 3\), column data_center_1gpu: 'Dayz'"):
        survey.load_survey(path)


def test_headline_on_fixture() -> None:
    got = survey.headline(survey.load_survey(FIXTURE)).set_index("key")["value"]
    # Tallied from the fixture: 11 of 20 Ph.D. students; 16 zero budgets; 14 satisfaction <= 3;
    # 14 NVLink/NVSwitch; 4 Ethernet, 6 Infiniband, 7 "No multi-node support"; 10 Model Analysis.
    assert got.to_dict() == pytest.approx({
        "respondents": 20, "share_phd_students": 0.55, "share_zero_cloud_budget": 0.80,
        "share_satisfaction_le_3": 0.70, "share_no_multinode": 0.35, "share_inter_gpu_link": 0.70,
        "share_ethernet": 0.20, "share_infiniband": 0.30, "share_uses_model_analysis": 0.50,
    })


def test_availability_summary_on_fixture() -> None:
    av = survey.summarise(survey.load_survey(FIXTURE))["availability"]
    assert len(av) == 3 * 7 * 6
    assert av.groupby(["tier", "n_gpus"])["share"].sum().round(9).eq(1).all()
    dc4 = av[(av["tier"] == "data_center") & (av["n_gpus"] == 4)].set_index("level")
    # 4 data-centre GPUs: 8 N/A, 1 Hours, 8 Days, 2 Weeks, 1 Months, 0 Indefinitely.
    assert dc4["count"].to_dict() == {"N/A": 8, "Hours": 1, "Days": 8, "Weeks": 2, "Months": 1, "Indefinitely": 0}
    assert dc4.loc["Days", "share_at_least"] == pytest.approx(0.55)
    dc64 = av[(av["tier"] == "data_center") & (av["n_gpus"] == 64)].set_index("level")
    assert dc64.loc["Hours", "count"] == 1


def test_other_summaries_on_fixture() -> None:
    s = survey.summarise(survey.load_survey(FIXTURE))
    assert set(s) == {"headline", "availability", "role", "uses", "gpu_link", "node_link", "cloud_budget"}
    budget = s["cloud_budget"].set_index("bucket")["count"].to_dict()
    assert budget == {"0": 16, "1-100": 1, "101-1,000": 2, ">1,000": 1, "no answer": 0}
    links = s["gpu_link"].set_index("choice")["count"].to_dict()
    assert links == {"NVLink": 12, "NVSwitch": 4, "No": 4, "Not sure": 2}
    assert s["role"].set_index("choice").loc["Ph.D. Student", "count"] == 11


def test_compare_with_paper_pairs_keys() -> None:
    cmp = survey.compare_with_paper(survey.load_survey(FIXTURE)).set_index("key")
    assert cmp.loc["share_inter_gpu_link", "paper_value"] == 0.70
    assert cmp.loc["respondents", "source"] == "Sec. 2"
