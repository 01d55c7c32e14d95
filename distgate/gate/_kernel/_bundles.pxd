# The compiled gate's arguments as C structs of pointers into the arrays of
# distgate.gate._kernel.bundles (whose named tuples say what each field holds), and its
# constants. The structs are filled once per gate state by _run.pyx (KernelBinding), which
# checks every array's type and size: the kernel trusts them.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t

cdef extern from *:
    """
    #define DG_LN2 0.6931471805599453
    #define DG_ZERO 1e-12
    #define DG_TIE_RELATIVE 1e-9
    #define DG_TIE_ABSOLUTE 1e-12
    #define DG_ROUNDING 1e-11
    #define DG_REARRANGED 1e-13
    #define DG_EPSILON 2.220446049250313e-16
    """
    # distgate.gate._kernel.bundles, distgate.gate.sums.ZERO, distgate.stats.handover's
    # TIE_RELATIVE and TIE_ABSOLUTE (a test holds them equal)
    const double LN2 "DG_LN2"
    const double ZERO "DG_ZERO"
    const double TIE_RELATIVE "DG_TIE_RELATIVE"
    const double TIE_ABSOLUTE "DG_TIE_ABSOLUTE"
    const double ROUNDING "DG_ROUNDING"
    const double REARRANGED "DG_REARRANGED"
    const double EPSILON "DG_EPSILON"

cdef enum:
    # decisions (distgate.gate.decisions)
    RELEASED = 0
    QUEUED = 1
    DENIED = 2
    DUPLICATE = 3
    UNKNOWN = 4
    # kernel metric codes (distgate.stats.metrics.registry)
    KLD = 0
    MIS = 1
    CST = 2
    DQT = 3
    EXPOSURE = 4
    MIN_COUNT = 5  # cst's merged groups (distgate.stats.metrics.pearson)
    NOT_FOUND = -1
    AHEAD = 8  # requests looked ahead: their records' flags and codes are prefetched
    # Counts.tally entries
    CHECKED_TOTAL = 0
    ALL_TOTAL = 1
    PRESENT_TARGETS = 2
    # Queue.tally entries: slots used (alive or released), entries still queued
    FILL = 0
    LIVE = 1
    # families of metrics, by how the gate finds the cells one release can make safe
    KEYED_FAMILY = 1
    CST_FAMILY = 2
    DQT_FAMILY = 4
    ALL_FAMILIES = 7
    # Work.counters entries
    ALIVE = 0
    LATE = 1
    SAFE_GROUPS = 2
    SETTLE = 3
    CANDIDATE = 4
    TOUCHED = 5
    VERSION = 6
    # Work.bound_parts rows
    KLD_BOUND = 0
    KLD_BAND = 1
    MIS_OFFSET = 2
    SIZES = 3
    REST = 4
    SUMS_BAND = 5
    # Work.breaks rows
    LOW_A = 0
    HIGH_A = 1
    LOW_B = 2
    HIGH_B = 3
    # Work.ranks entries
    TOP1 = 0
    TOP2 = 1
    TOP3 = 2
    BOTTOM1 = 3
    BOTTOM2 = 4
    AT_TOP1 = 5
    AT_TOP2 = 6
    AT_BOTTOM1 = 7
    RANKED = 8
    DISTINCT = 9
    INFINITE = 10
    # what one more tuple does to cst's groups
    STAYS = 0
    CLOSES_TAIL = 1
    REGROUPS = 2


cdef struct Joint  # (below: a Work points to it)


cdef struct Tables:
    const char* target_codes  # (records,) signed integers of target_width bytes
    const char* value_codes  # (records,) signed integers of value_width bytes
    int target_width
    int value_width
    const int64_t* metrics
    Py_ssize_t n_metrics
    int64_t chosen
    int64_t families
    const double* logp
    const double* p
    const double* chi2
    const double* kld_mc
    int64_t kld_switch
    const double* kld_factor
    Py_ssize_t kld_factor_len
    const double* cst_mc
    int64_t cst_switch
    const double* cst_factor
    Py_ssize_t cst_factor_len
    bint cst_floor
    const double* mis_mc
    int64_t mis_switch
    const double* mis_factor
    Py_ssize_t mis_factor_len
    const double* dqt_sized
    Py_ssize_t dqt_sized_len
    const double* dixon
    const double* spread
    const int64_t* need_n
    const int64_t* need_v
    int64_t domain
    bint auto_mode  # Tables.auto
    int64_t floor_size  # Tables.switch
    bint queue_on
    const double* xlogx
    bint distances
    const int64_t* group_of
    int64_t group_size
    int64_t views  # views the gate protects: more than one keeps each view's verdicts


cdef struct Counts:
    int64_t* C  # (Y, X)
    Py_ssize_t Y
    Py_ssize_t X
    int64_t* n
    int64_t* distinct
    double* S
    double* L
    double* D
    double* term
    uint8_t* checked
    uint8_t* released
    int64_t* released_at
    int64_t* tally
    double* weighted


cdef struct Queue:
    int64_t* arrival
    int64_t* record
    int64_t* cell
    uint64_t* alive
    uint64_t* slots  # (groups, slots_row)
    Py_ssize_t slots_row
    uint64_t* map1  # (groups, map1_row)
    Py_ssize_t map1_row
    uint64_t* map2  # (groups, map2_row)
    Py_ssize_t map2_row
    int64_t* cell_alive
    uint8_t* queued
    int64_t* tally


cdef struct Work:
    Py_ssize_t Y
    Py_ssize_t X
    Py_ssize_t cells
    double* values
    int64_t* cst_group
    int8_t* cst_kind
    double* cst_observed
    double* cst_share
    double* cst_term
    int64_t* cst_groups
    double* cst_tail
    double* cst_base
    uint8_t* cst_valid
    double* result
    uint8_t* safe
    int64_t* group_safe
    int64_t* safe_groups
    int64_t* group_place
    uint8_t* family_ok  # (3, cells)
    int64_t* touched
    int64_t* touched_list
    int64_t* rechecks  # (2, Y)
    int64_t* target_alive
    uint8_t* stale_distance
    double* g
    uint8_t* g_valid
    double* bound_parts  # (6, Y)
    uint8_t* bound_valid
    double* sure
    double* maybe
    uint8_t* decided
    double* breaks  # (4, Y)
    int64_t* edges  # (Y, 3)
    double* mis_limit
    double* dqt  # (5, Y)
    double* ranks
    int64_t* target_of
    uint8_t* band_ok
    int64_t* order
    int64_t* place
    int64_t* counters
    uint8_t* ready
    int64_t* cell_alive  # queued entries per cell of this view (the queue's own, one view)
    Joint* joint  # the joint cells of several views (NULL: one view)
    int64_t view  # this view's place among them


cdef struct Joint:
    # Several views: the queue holds joint cells (a record's cells in every view at once),
    # safe when each of their cells is safe in its own view. Each view keeps its verdicts
    # in its Work (``safe``), and a change of one is passed on to the joint cells holding
    # that cell, which enter or leave the queue's safe set (``queue_work``).
    Py_ssize_t views
    Py_ssize_t cells  # joint cells
    const int64_t* view_cells  # (cells, views): a joint cell's cell in each view
    const int64_t* of_record  # (records,): a record's joint cell
    const int64_t* starts  # each view's cells' first place in members, view after view
    const int64_t* view_start  # (views,): where a view's cells begin in starts
    const int64_t* members  # the joint cells holding each cell of each view
    int64_t* unsafe  # (cells,): views in which a joint cell's cell is not safe
    const int64_t* alive  # (cells,): queued entries per joint cell (the queue's)
    const int64_t* group_of  # (cells,): a joint cell's group in the queue's maps
    Work* queue_work  # the safe set of joint cells (and the queue's counters)
    # each joint cell's slots in arrival order, in a run of its own in ``slots`` (a search
    # looks in the safe ones', _search.pxd), one place per record of the cell
    const int64_t* slot_start  # (cells + 1,): where a joint cell's run begins in slots
    int64_t* slots  # (records,): each joint cell's slots, in arrival order
    int64_t* next_live  # (records,): a place itself if its slot is live or not yet taken,
    # else a place further on in its run, up to the first live one (or the run's tail)
    int64_t* head  # (cells,): the place in slots of its first live slot (tail: none)
    int64_t* head_slot  # (cells,): that slot (while head is before tail)
    int64_t* tail  # (cells,): the place after its last slot
    int64_t* cursor  # (cells,): the place of its first live slot after the pass position
    # last asked
    int64_t* cursor_pass  # (cells,): the pass that cursor is of
    int64_t pass_id  # the queue pass under way (a new one starts from the queue's start)
    # the safe joint cells by their first live slot after the pass position: a 4-ary heap
    # of (slot, cell) entries, each one number (slot << cell_bits | cell), an entry
    # standing while its cell's key is that number
    int64_t* heap  # (heap_room,)
    int64_t cell_bits  # the bits that hold a joint cell in an entry
    int64_t cell_mask
    int64_t heap_size
    int64_t heap_room
    int64_t* key  # (cells,): a joint cell's entry in the heap (-1: none stands); kept while
    # the cell turns unsafe, until its entry comes to the top (_search.next_safe_joint)
    int64_t heap_safe  # the standing entries whose cells are safe now: none, and a search
    # finds nothing without taking the unsafe cells' entries out one by one
    int64_t* pending  # (cells,): joint cells made safe since the last search
    int64_t pending_count
    uint8_t* is_pending  # (cells,)


cdef struct Outputs:
    int8_t* decision
    int64_t* released_at
    double* statistic
    double* critical
    int64_t* total
    uint8_t* enqueued
    int16_t* view  # the first view that blocked the request (-1: none)
    int64_t* late_request
    int64_t* late_at


cdef inline double pymin(double a, double b) noexcept nogil:
    """Python's min(a, b) (and numba's): b only if b < a, so a NaN b gives a."""
    return b if b < a else a


cdef inline double pymax(double a, double b) noexcept nogil:
    """Python's max(a, b): b only if b > a."""
    return b if b > a else a


cdef inline int64_t read_code(const char* codes, int width, int64_t i) noexcept nogil:
    """Entry i of a code array stored in the fewest bytes that hold its codes."""
    if width == 1:
        return (<const int8_t*>codes)[i]
    if width == 2:
        return (<const int16_t*>codes)[i]
    if width == 4:
        return (<const int32_t*>codes)[i]
    return (<const int64_t*>codes)[i]
