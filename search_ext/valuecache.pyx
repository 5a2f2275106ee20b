"""A network's values by state, for games played many at a time (``descent.batched``).

Each state is known by a 64-bit hash of its planes (the network's whole input, so two states with
the same planes get the same value from the network anyway). A batch is looked up in one call: the
hits get their values at once, the misses are copied (once each: a state asked twice in one batch
is asked once) into a buffer for the network, and ``store`` hands the network's values back to
every row that waited for them and keeps them.

Memory is bounded: two generations of at most ``states`` entries each, open addressing with linear
probing at a load of at most one half. A batch that would fill the current generation first turns
it into the previous one (the older previous is dropped); a hit in the previous generation is copied
into the current one, so the states in use survive (an approximation of least recently used).

The hash: every 8-byte word of a state's planes is folded into a running value by xor followed by
the 64-bit finalizer of MurmurHash3 (Austin Appleby's public-domain constants: a bijective mix of
the 64 bits), seeded with the planes' length. Two different states collide with a chance of about
2^-64 per pair.
"""
from libc.stdint cimport uint64_t, int32_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset


cdef inline uint64_t fmix(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= <uint64_t>0xff51afd7ed558ccdULL
    x ^= x >> 33
    x *= <uint64_t>0xc4ceb9fe1a85ec53ULL
    x ^= x >> 33
    return x


cdef inline uint64_t hash_row(const float* row, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t nw = size // 2, i
    cdef const uint64_t* w = <const uint64_t*>row
    cdef uint64_t h = fmix(<uint64_t>size * <uint64_t>0x9e3779b97f4a7c15ULL)
    cdef uint64_t last = 0
    for i in range(nw):
        h = fmix(h ^ w[i])
    if size & 1:
        memcpy(&last, &row[size - 1], 4)
        h = fmix(h ^ last ^ <uint64_t>0x5bd1e995)
    return h if h != 0 else 1                 # 0 marks an empty slot


cdef struct Gen:
    uint64_t* keys
    float* vals
    int32_t* pend          # >= 0: the value is the network's answer number pend of this batch
    long count


cdef class ValueCache:
    """Values of one network by state (see the module). ``states``: the most entries of one
    generation (two are kept)."""
    cdef Gen cur, prev
    cdef long slots, mask, limit
    cdef readonly long hits, misses
    # the batch in progress
    cdef int32_t* src          # per row: the answer it waits for, or -1 (a hit)
    cdef long* ask_slot        # per answer: its slot in the current generation
    cdef long cap_rows, n_rows, n_ask

    def __cinit__(self, long states):
        if states < 1:
            raise ValueError(f"ValueCache: states must be >= 1, got {states}")
        self.limit = states
        self.slots = 16
        while self.slots < 2 * states:
            self.slots *= 2
        self.mask = self.slots - 1
        self.cur.keys = NULL
        self.prev.keys = NULL
        self.src = NULL
        self.ask_slot = NULL
        if not self._alloc(&self.cur) or not self._alloc(&self.prev):
            raise MemoryError("ValueCache: no memory for the table")
        self.cap_rows = 0

    cdef bint _alloc(self, Gen* g):
        g.keys = <uint64_t*>calloc(self.slots, sizeof(uint64_t))
        g.vals = <float*>malloc(self.slots * sizeof(float))
        g.pend = <int32_t*>malloc(self.slots * sizeof(int32_t))
        g.count = 0
        return g.keys != NULL and g.vals != NULL and g.pend != NULL

    cdef void _release(self, Gen* g):
        free(g.keys)
        free(g.vals)
        free(g.pend)
        g.keys = NULL

    def __dealloc__(self):
        if self.cur.keys != NULL or self.cur.vals != NULL:
            self._release(&self.cur)
        if self.prev.keys != NULL or self.prev.vals != NULL:
            self._release(&self.prev)
        free(self.src)
        free(self.ask_slot)

    @property
    def size(self) -> int:
        """Entries held (both generations)."""
        return self.cur.count + self.prev.count

    @property
    def bytes(self) -> int:
        return 2 * self.slots * (sizeof(uint64_t) + sizeof(float) + sizeof(int32_t))

    def clear(self) -> None:
        """Forget every value (the evaluator changed: new weights)."""
        memset(self.cur.keys, 0, self.slots * sizeof(uint64_t))
        memset(self.prev.keys, 0, self.slots * sizeof(uint64_t))
        self.cur.count = 0
        self.prev.count = 0

    cdef inline long probe(self, Gen* g, uint64_t h) noexcept nogil:
        cdef long i = <long>(h & <uint64_t>self.mask)
        while g.keys[i] != 0 and g.keys[i] != h:
            i = (i + 1) & self.mask
        return i

    def lookup(self, float[:, ::1] rows, float[::1] values, float[:, ::1] ask):
        """Look the states ``rows`` (one per row: its planes, flattened) up: a hit's value goes to
        ``values[i]``; each distinct miss is copied to the next row of ``ask``. Returns the number
        of rows of ``ask`` to value (then ``store``); 0 when every state was known."""
        cdef long n = rows.shape[0], size = rows.shape[1], i, s, t
        cdef uint64_t h
        cdef Gen tmp
        if values.shape[0] < n or ask.shape[0] < n or (n and ask.shape[1] != size):
            raise ValueError("ValueCache.lookup: values or ask too small")
        if n > self.cap_rows:
            free(self.src)
            free(self.ask_slot)
            self.src = <int32_t*>malloc(n * sizeof(int32_t))
            self.ask_slot = <long*>malloc(n * sizeof(long))
            if self.src == NULL or self.ask_slot == NULL:
                self.cap_rows = 0
                raise MemoryError("ValueCache: no memory for a batch")
            self.cap_rows = n
        if self.n_ask > 0:                       # the last batch was never stored (its call failed):
            memset(self.cur.keys, 0, self.slots * sizeof(uint64_t))    # drop its pending entries
            self.cur.count = 0
        self.n_rows, self.n_ask = n, 0
        if n > self.limit:                       # larger than a generation: asked as it is, not kept
            for i in range(n):
                self.src[i] = i
                self.ask_slot[i] = -1
                memcpy(&ask[i, 0], &rows[i, 0], size * sizeof(float))
            self.n_ask = n
            self.misses += n
            return n
        with nogil:
            if self.cur.count + n > self.limit:  # a new generation
                tmp = self.prev
                self.prev = self.cur
                self.cur = tmp
                memset(self.cur.keys, 0, self.slots * sizeof(uint64_t))
                self.cur.count = 0
            for i in range(n):
                h = hash_row(&rows[i, 0], size)
                s = self.probe(&self.cur, h)
                if self.cur.keys[s] == h:
                    if self.cur.pend[s] >= 0:    # asked already in this batch
                        self.src[i] = self.cur.pend[s]
                    else:
                        values[i] = self.cur.vals[s]
                        self.src[i] = -1
                        self.hits += 1
                    continue
                self.cur.keys[s] = h
                self.cur.count += 1
                t = self.probe(&self.prev, h)
                if self.prev.keys[t] == h and self.prev.pend[t] < 0:
                    self.cur.vals[s] = self.prev.vals[t]    # kept in the current generation
                    self.cur.pend[s] = -1
                    values[i] = self.prev.vals[t]
                    self.src[i] = -1
                    self.hits += 1
                    continue
                self.cur.pend[s] = <int32_t>self.n_ask
                self.ask_slot[self.n_ask] = s
                self.src[i] = <int32_t>self.n_ask
                memcpy(&ask[self.n_ask, 0], &rows[i, 0], size * sizeof(float))
                self.n_ask += 1
                self.misses += 1
        return self.n_ask

    def store(self, const float[::1] answers, float[::1] values):
        """The network's values of the rows of ``ask`` named by the last ``lookup``: kept, and given
        to every row of that lookup that waited for them (``values[i]``)."""
        cdef long i, s
        cdef int32_t j
        if answers.shape[0] < self.n_ask or values.shape[0] < self.n_rows:
            raise ValueError("ValueCache.store: too few values")
        with nogil:
            for i in range(self.n_ask):
                s = self.ask_slot[i]
                if s >= 0:
                    self.cur.vals[s] = answers[i]
                    self.cur.pend[s] = -1
            for i in range(self.n_rows):
                j = self.src[i]
                if j >= 0:
                    values[i] = answers[j]
        self.n_ask = 0
        self.n_rows = 0
