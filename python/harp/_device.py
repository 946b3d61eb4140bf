"""harp.device: torch.device's class for harp's two devices.

A device is a type ("cpu" or "cuda") and an optional index, written
"cuda:0" as torch writes it. It is a `str` whose characters are what
harp's functions take ("cpu" or "cuda"; "cuda:1" for an index other than
0, which they reject: harp drives one GPU), so a device is accepted
wherever a device name is: `harp.tensor(x, device=d)`, `t.to(d)`,
`module.to(d)`.
"""

__all__ = ["device"]

_TYPES = ("cpu", "cuda")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class device(str):
    """A device as torch.device: device("cpu"), device("cuda"),
    device("cuda:0"), device("cuda", 0), device(0) (cuda:0) or a copy of
    another device. `type` is "cpu" or "cuda" and `index` the index or
    None; str() gives "cuda:0" and repr() "device(type='cuda', index=0)".
    Two devices are equal when type and index are; a device also equals the
    name it is written as ("cpu" == device("cpu"), as a harp tensor's
    `device` is that name). str's own methods (len, startswith, ...) see
    the characters harp's functions take ("cuda" for cuda:0)."""

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise ValueError("harp.device: an index cannot be given with a "
                                 "device (%s)" % type)
            return type
        if _is_int(type):
            if index is not None:
                raise TypeError("harp.device: an index cannot be given with "
                                "an index (%d)" % type)
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError("harp.device: expected a device name such as 'cpu' "
                            "or 'cuda:0', got %s" % _type_name(type))
        name = str.__str__(type)
        if ":" in name:
            if index is not None:
                raise ValueError("harp.device: the type %r must not include an "
                                 "index when index is given" % name)
            name, _, digits = name.partition(":")
            if not (digits.isascii() and digits.isdigit()):
                raise ValueError("harp.device: invalid device string %r" % str.__str__(type))
            index = int(digits)
        if name not in _TYPES:
            raise ValueError("harp.device: unknown device type %r (harp has "
                             "'cpu' and 'cuda')" % name)
        if index is not None:
            if not _is_int(index):
                raise TypeError("harp.device: the index must be an int, got %s"
                                % _type_name(index))
            if index < 0:
                raise ValueError("harp.device: the index must not be negative, "
                                 "got %d" % index)
        # The characters are what harp's functions take: the type, or the
        # full name (rejected by them) for an index they cannot reach.
        self = super().__new__(cls, name if index in (None, 0) else "%s:%d" % (name, index))
        self._type, self._index = name, index
        return self

    @property
    def type(self):
        """"cpu" or "cuda"."""
        return self._type

    @property
    def index(self):
        """The index given, or None."""
        return self._index

    def __str__(self):
        return self._type if self._index is None else "%s:%d" % (self._type, self._index)

    def __format__(self, spec):
        return format(str(self), spec)

    def __repr__(self):
        if self._index is None:
            return "device(type=%r)" % self._type
        return "device(type=%r, index=%d)" % (self._type, self._index)

    def __eq__(self, other):
        if isinstance(other, device):
            return (self._type, self._index) == (other._type, other._index)
        if isinstance(other, str):
            try:
                other = device(other)
            except ValueError:
                return False
            return self == other
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(str(self))

    def __reduce__(self):
        return (device, (self._type, self._index))


def _type_name(value):
    return type(value).__name__
