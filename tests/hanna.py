"""Where the HANNA study shipped with the project lives (fixtures/hanna/)."""

from pathlib import Path

HANNA_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "hanna"
HANNA_HUMAN = HANNA_DIR / "hanna_human_long.csv"
HANNA_JUDGES = HANNA_DIR / "hanna_llm_scores_wide.csv"
