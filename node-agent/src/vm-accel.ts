/** How QEMU runs guests on this host: hardware virtualization or software emulation. */
export type VmAccel = 'kvm' | 'tcg';
