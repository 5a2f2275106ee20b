"""A best-first search that keeps every state it searched, whatever the root: for tests that need the
states of several roots in one table (history-dependent keys reached by different move orders, a
relinked child). ``BestFirstSearch`` keeps only the new root's subtree when the root moves on
(``_root_moved``); this subclass keeps everything, and its ``verify`` does not ask every state to be
reachable from the root."""
from search_ext.bestfirst import BestFirstSearch


class KeptTreeSearch(BestFirstSearch):
    def _root_moved(self, root):
        return root

    def verify(self, state, all_reachable=False):
        return super().verify(state, all_reachable)
