"""Turning result rows into the book's tables: best settings, speed-ups, honesty checks, the paper beside ours.

Everything starts from ``runs_frame()`` (``frame``): one row per result row of every shipped run
(``notebooks/runs/<setup>/results.jsonl``), flattened into columns. Rows timed without synchronising with the GPU
(``timing == "unsynced"``) exist only for the honesty comparison (``sync_pairs``); every result table uses synced
step-mode rows. The submodules, in the order data flows through them: ``frame``, ``facts``, ``counted``, ``search``, ``best``,
``honesty``, ``profiles``, ``versus_paper``, ``provenance``; their public names are this package's.
"""
from .frame import (  # noqa: F401
    COLUMNS,
    METHOD_CLASSES,
    METHOD_COLUMNS,
    MFU_IMPLAUSIBLE,
    PHASES,
    RUNS_ENV,
    SETTING,
    frame_from_rows,
    method_class,
    runs_frame,
    runs_root,
    setups,
)
from .facts import (  # noqa: F401
    CACHE_ENV,
    MFU_DIGITS,
    dense16_peak,
    mfu_on_dense16,
    shown_mfu,
    gpu_label,
    model_facts,
    model_label,
    setup_label,
)
from .counted import (  # noqa: F401
    VALIDATION_KEY,
    VALIDATION_TOLERANCE,
    latest_validations,
    measured_rows,
    missed_validation,
    results,
    uncounted,
    unvalidated_rows,
    validation_state,
    validation_verdicts,
    validations,
    within_tolerance,
)
from .launches import (CHECK_SEARCH_COLUMNS, ENGINE_CHANGE_COLUMNS, FORKED_AB_COLUMNS,  # noqa: F401
                       LAUNCH_CHECK_COLUMNS, ONE_PROCESS_COLUMNS, ONE_PROCESS_SEARCH_COLUMNS, SEARCH_COST_COLUMNS,
                       check_searches, engine_changes, forked_ab, launch_check, one_process, search_cost,
                       wall_breakdown)
from .honesty import (  # noqa: F401
    CONFIGURATION_COST_COLUMNS,
    ENGINE_COST_COLUMNS,
    FIT_COLUMNS,
    MEMORY_COLUMNS,
    NET_COLUMNS,
    RESERVE_COLUMNS,
    SET_ASIDE_COLUMNS,
    SYNC_COLUMNS,
    VALIDATION_COLUMNS,
    VARIANCE_COLUMNS,
    WALL_COLUMNS,
    allocator_reserve,
    configuration_cost,
    engine_cost,
    fit_predictions,
    implausible,
    memory_model_error,
    memory_wall,
    set_aside,
    sync_pairs,
    validation_net,
    validation_pairs,
    variance,
)
from .best import (  # noqa: F401
    BREAKDOWN_COLUMNS,
    COVERAGE_COLUMNS,
    COVERAGE_SEARCHES,
    COVERAGE_STATUSES,
    FEASIBILITY_COLUMNS,
    SPEEDUP_COLUMNS,
    best_per_setting,
    combination_spread,
    coverage,
    fastest,
    feasibility,
    free_lunch_per_setting,
    free_lunch_speedup,
    gpus_in_words,
    memory_saving_speedup,
    naive_per_setting,
    optimized_per_setting,
    optimized_speedup,
    without_optimum,
    outcome_counts,
    planned_setups,
    setup_names,
    setups_in_words,
    step_breakdown,
    unrun_setups,
)
from .profiles import (  # noqa: F401
    PROFILE_COLUMNS,
    largest_kernels,
    latest_profiles,
    matmul_check,
    mfu_factors,
    profile_frame,
    profiles,
)
from .search import (  # noqa: F401
    COMBINATION_COLUMNS,
    REPLAY_COLUMNS,
    SEARCH_COLUMNS,
    search_combinations,
    skipped_frame,
    smart_replayed,
    smart_vs_exhaustive,
    step_spreads,
)
from .versus_paper import (  # noqa: F401
    COMPARISON_COLUMNS,
    CONV_FAMILIES,
    PAPER_COLUMNS,
    TABLE1_COLUMNS,
    paper_cells,
    paper_comparison,
    settings_comparison,
    table1_long,
)
from .provenance import (  # noqa: F401
    PROVENANCE_COLUMNS,
    provenance,
)
