"""Exceptions raised by the game engines. All are ``ValueError`` subclasses whose message names the
offending input and, where there is one, the position."""


class GameError(ValueError):
    """Base class of the game errors."""


class UnknownGameError(GameError):
    """A game name that is not registered."""


class InvalidGameSpecError(GameError):
    """A malformed ``NAME(key=value,...)`` spec, an unknown parameter or a bad parameter value."""


class InvalidMoveError(GameError):
    """Text that is not a move in the game's notation (malformed, or off the board)."""


class IllegalMoveError(GameError):
    """A well-formed move that is not legal in the position."""


class InvalidPositionError(GameError):
    """Text that is not a valid position in the game's format."""


class WrongGameError(InvalidPositionError):
    """A state of another game, or of the same game with other parameters (``reversi(size=6)`` for
    ``reversi``), or not a state at all, given to an agent or a search built for a game."""


class GameOverError(InvalidPositionError):
    """A move asked of an agent in a position where the game is over."""


class PluginError(GameError):
    """A game written in Python (``module:Class`` or an entry point of the ``descent.games`` group)
    that cannot be used: it does not import, lacks a method, or gives facts, actions or planes that
    break the game protocol (``games.protocol``); or one of its methods raised during play. The
    message names the plugin and the problem in one line."""
