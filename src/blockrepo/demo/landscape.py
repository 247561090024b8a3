"""The demo company, Alpenrad (a bicycle maker with shops, a plant and a warehouse), as plain data.

Everything here is written through the public services exactly as an administrator and an architect would
enter it: the metamodel additions and accounts as administration bodies, the elements as element-API
bodies whose relations name their targets (`{"name": …}`), so that the order below is the creation order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# --- metamodel additions and accounts (administration API bodies) ---------------------------------------

BUSINESS_TYPES = (
    "BusinessDomain",
    "BusinessProcess",
    "BusinessUnit",
    "Product",
    "BusinessFunction",
    "BusinessObject",
)
EVERY_TYPE = "*"  # stands for every building block type of the metamodel
READER_ROLE = "Reader"
EDITOR_ROLE = "Business editor"

ROLES: tuple[dict[str, Any], ...] = (
    {
        "name": READER_ROLE,
        "description": "Reads the whole landscape, its lists and queries, and its history; changes nothing",
        "typePermissions": {EVERY_TYPE: ["read"]},
        # MASSDATA lets a reader list, search and query what it may read; writing still needs the type's
        # write permissions, which this role has none of.
        "functionalPermissions": ["VIEW_HISTORY", "MASSDATA"],
    },
    {
        "name": EDITOR_ROLE,
        "description": "Maintains the business architecture; reads everything else",
        "subRoles": [READER_ROLE],
        "typePermissions": {name: ["read", "create", "update", "delete"] for name in BUSINESS_TYPES},
        "functionalPermissions": ["VIEW_HISTORY", "MASSDATA"],
    },
)

USERS: tuple[dict[str, Any], ...] = (
    {
        "login": "anna",
        "firstName": "Anna",
        "lastName": "Albrecht",
        "email": "anna@alpenrad.example",
        "roles": [READER_ROLE],
    },
    {
        "login": "bernd",
        "firstName": "Bernd",
        "lastName": "Becker",
        "email": "bernd@alpenrad.example",
        "roles": [EDITOR_ROLE],
    },
)

ATTRIBUTE_GROUPS: tuple[dict[str, Any], ...] = (
    {"name": "Operations", "description": "Running the landscape: criticality, responsibility, dates, tags"},
    {
        "name": "Finance",
        "description": "Costs; confidential: readable by business editors (and supervisors) only",
        "permissions": [{"role": EDITOR_ROLE, "read": True, "write": True}],
    },
)

ATTRIBUTES: tuple[dict[str, Any], ...] = (
    {
        "name": "Criticality",
        "description": "How badly an outage hurts the business",
        "valueType": "enum",
        "group": "Operations",
        "types": ["BusinessProcess", "InformationSystem"],
        "literals": [
            {"name": "low", "color": "#2e7d32"},
            {"name": "medium", "color": "#f9a825"},
            {"name": "high", "color": "#c62828"},
        ],
    },
    {
        "name": "Annual costs",
        "description": "Licences, operations and support per year",
        "valueType": "number",
        "unit": "EUR",
        "min": 0,
        "group": "Finance",
        "types": ["InformationSystem", "TechnicalComponent"],
    },
    {
        "name": "Responsible",
        "description": "Who answers for this element",
        "valueType": "responsibility",
        "group": "Operations",
        "types": [EVERY_TYPE],
    },
    {
        "name": "Go-live",
        "description": "The day the system went (or goes) into production",
        "valueType": "date",
        "group": "Operations",
        "types": ["InformationSystem"],
    },
    {
        "name": "Tags",
        "description": "Free classification",
        "valueType": "enum",
        "multiple": True,
        "group": "Operations",
        "types": [EVERY_TYPE],
        "literals": [
            {"name": "cloud"},
            {"name": "legacy"},
            {"name": "customer-facing"},
            {"name": "regulated"},
            {"name": "strategic"},
        ],
    },
)

# --- elements ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One element to create: scalar properties, the parent's name and relation ends by target names."""

    type_name: str
    name: str
    description: str = ""
    parent: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    ends: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": [self.name]}
        if self.description:
            body["description"] = [self.description]
        if self.parent:
            body["parent"] = [{"name": self.parent}]
        for key, value in self.values.items():
            if value is None or value == ():
                continue
            body[key] = list(value) if isinstance(value, tuple) else [value]
        for end, names in self.ends.items():
            if names:
                body[end] = [{"name": name} for name in names]
        return body


def _blocks(type_name: str, rows: Sequence[tuple[Any, ...]], responsible: str) -> list[Block]:
    """Rows of (name, description, parent, {end: targets}) for the simple types."""
    return [
        Block(type_name, name, description, parent, {"Responsible": responsible}, ends)
        for name, description, parent, ends in rows
    ]


BUSINESS_DOMAINS = _blocks(
    "BusinessDomain",
    [
        ("Sales and service", "Selling bikes to dealers and consumers, and keeping them riding", None, {}),
        ("Product and production", "Designing and building the bikes", None, {}),
        ("Supply chain", "Buying parts, storing and shipping", None, {}),
        ("Finance", "Accounting, controlling and reporting", None, {}),
        ("People", "Hiring, paying and developing employees", None, {}),
    ],
    "bernd",
)

# (name, description, parent, criticality, predecessors)
_PROCESSES: tuple[tuple[str, str, str | None, str, tuple[str, ...]], ...] = (
    ("Order to cash", "From a customer's order to the cash on the account", None, "high", ()),
    ("Order handling", "From order to invoice", "Order to cash", "high", ()),
    (
        "Order entry",
        "Orders arrive from the shop, dealers and the service desk",
        "Order handling",
        "high",
        (),
    ),
    (
        "Credit check",
        "Limits for dealers, payment checks for consumers",
        "Order handling",
        "medium",
        ("Order entry",),
    ),
    (
        "Order confirmation",
        "Delivery date promised to the customer",
        "Order handling",
        "medium",
        ("Credit check",),
    ),
    ("Delivery", "From the warehouse to the customer", "Order to cash", "high", ("Order handling",)),
    ("Picking and packing", "", "Delivery", "medium", ()),
    ("Shipping", "Carrier booking and tracking", "Delivery", "medium", ("Picking and packing",)),
    ("Invoicing and collection", "", "Order to cash", "high", ("Delivery",)),
    ("Invoicing", "Invoices, also as e-invoices to dealers", "Invoicing and collection", "high", ()),
    ("Dunning", "", "Invoicing and collection", "low", ("Invoicing",)),
    ("Procure to pay", "From a need for parts to the paid supplier invoice", None, "high", ()),
    ("Purchasing", "", "Procure to pay", "high", ()),
    ("Demand planning", "", "Purchasing", "medium", ()),
    ("Purchase ordering", "", "Purchasing", "high", ("Demand planning",)),
    ("Goods receipt", "", "Procure to pay", "medium", ("Purchasing",)),
    ("Incoming inspection", "", "Goods receipt", "medium", ()),
    ("Warehousing", "", "Goods receipt", "medium", ("Incoming inspection",)),
    ("Supplier payment", "", "Procure to pay", "medium", ("Goods receipt",)),
    ("Plan to produce", "From the sales plan to the finished bike", None, "high", ()),
    ("Production planning", "", "Plan to produce", "high", ()),
    ("Capacity planning", "", "Production planning", "medium", ()),
    ("Material requirements planning", "", "Production planning", "high", ("Capacity planning",)),
    ("Manufacturing", "", "Plan to produce", "high", ("Production planning",)),
    ("Frame welding", "", "Manufacturing", "high", ()),
    ("Assembly", "", "Manufacturing", "high", ("Frame welding",)),
    ("Final inspection", "Safety test of every bike", "Manufacturing", "high", ("Assembly",)),
    ("Design to release", "From the idea to a released model", None, "medium", ()),
    ("Product design", "", "Design to release", "medium", ()),
    ("Product release", "", "Design to release", "medium", ("Product design",)),
    ("Hire to retire", "", None, "medium", ()),
    ("Recruiting", "", "Hire to retire", "low", ()),
    ("Payroll", "", "Hire to retire", "high", ()),
    ("Record to report", "", None, "high", ()),
    ("Accounting", "", "Record to report", "high", ()),
    ("Controlling", "", "Record to report", "medium", ()),
    ("Financial reporting", "Monthly and annual statements", "Record to report", "high", ("Accounting",)),
)
_PROCESS_DOMAINS = {
    "Order to cash": "Sales and service",
    "Procure to pay": "Supply chain",
    "Plan to produce": "Product and production",
    "Design to release": "Product and production",
    "Hire to retire": "People",
    "Record to report": "Finance",
}
BUSINESS_PROCESSES = [
    Block(
        "BusinessProcess",
        name,
        description,
        parent,
        {"Criticality": criticality, "Responsible": "bernd"},
        {
            "predecessors": predecessors,
            "businessDomains": (_PROCESS_DOMAINS[name],) if name in _PROCESS_DOMAINS else (),
        },
    )
    for name, description, parent, criticality, predecessors in _PROCESSES
]

BUSINESS_UNITS = _blocks(
    "BusinessUnit",
    [
        ("Alpenrad Group", "Holding of the Alpenrad companies", None, {}),
        ("Sales Germany", "Dealers and the online shop in Germany", "Alpenrad Group", {"businessDomains": ("Sales and service",)}),
        ("Sales International", "Dealers in Austria, Switzerland and Italy", "Alpenrad Group", {"businessDomains": ("Sales and service",)}),
        ("Customer Service", "Hotline, warranty and repairs", "Alpenrad Group", {"businessDomains": ("Sales and service",)}),
        ("Plant Rosenheim", "Frame welding and assembly", "Alpenrad Group", {"businessDomains": ("Product and production",)}),
        ("Logistics Center Kiefersfelden", "Parts and finished bikes", "Alpenrad Group", {"businessDomains": ("Supply chain",)}),
        ("Finance and Controlling", "", "Alpenrad Group", {"businessDomains": ("Finance",)}),
        ("Human Resources", "", "Alpenrad Group", {"businessDomains": ("People",)}),
        ("Information Technology", "Runs the systems and the infrastructure", "Alpenrad Group", {}),
    ],
    "bernd",
)  # fmt: skip

PRODUCTS = _blocks(
    "Product",
    [
        ("City bikes", "", None, {"businessDomains": ("Sales and service",)}),
        ("E-bikes", "", None, {"businessDomains": ("Sales and service",)}),
        ("Mountain bikes", "", None, {"businessDomains": ("Sales and service",)}),
        ("Spare parts and service", "Parts, repairs and inspections", None, {"businessDomains": ("Sales and service",)}),
    ],
    "bernd",
)  # fmt: skip

BUSINESS_OBJECTS = [
    Block("BusinessObject", "Business partner", "Anyone Alpenrad does business with", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Customer", "Dealer or consumer", values={"Responsible": "bernd"}, ends={"generalisation": ("Business partner",)}),
    Block("BusinessObject", "Supplier", "", values={"Responsible": "bernd"}, ends={"generalisation": ("Business partner",)}),
    Block("BusinessObject", "Employee", "", values={"Responsible": "bernd", "Tags": ("regulated",)}),
    Block("BusinessObject", "Product master", "Models, variants and prices", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Bill of materials", "", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Sales order", "", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Purchase order", "", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Production order", "", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Shipment", "", values={"Responsible": "bernd"}),
    Block("BusinessObject", "Invoice", "", values={"Responsible": "bernd", "Tags": ("regulated",)}),
    Block("BusinessObject", "Payment", "", values={"Responsible": "bernd", "Tags": ("regulated",)}),
]  # fmt: skip

BUSINESS_FUNCTIONS = _blocks(
    "BusinessFunction",
    [
        ("Customer management", "", None, {"businessObjects": ("Customer",)}),
        ("Marketing", "", "Customer management", {}),
        ("Customer service", "", "Customer management", {}),
        ("Order management", "", None, {"businessObjects": ("Sales order",)}),
        ("Product development", "", None, {"businessObjects": ("Product master", "Bill of materials")}),
        ("Product data management", "", "Product development", {}),
        ("Manufacturing", "", None, {"businessObjects": ("Production order",)}),
        ("Production planning and control", "", "Manufacturing", {}),
        ("Quality management", "", "Manufacturing", {}),
        ("Logistics", "", None, {"businessObjects": ("Shipment",)}),
        ("Warehouse management", "", "Logistics", {}),
        ("Transport management", "", "Logistics", {}),
        ("Procurement", "", None, {"businessObjects": ("Supplier", "Purchase order")}),
        ("Financial management", "", None, {"businessObjects": ("Invoice", "Payment")}),
        ("Accounting", "", "Financial management", {}),
        ("Controlling", "", "Financial management", {}),
        ("Human resources management", "", None, {"businessObjects": ("Employee",)}),
        ("Payroll", "", "Human resources management", {}),
        ("Talent acquisition", "", "Human resources management", {}),
    ],
    "bernd",
)

ARCHITECTURAL_DOMAINS = _blocks(
    "ArchitecturalDomain",
    [
        ("Business applications", "", None, {}),
        ("Data and analytics", "", None, {}),
        ("Integration", "", None, {}),
        ("Platforms", "Runtimes, databases and container platforms", None, {}),
        ("Security", "", None, {}),
    ],
    "anna",
)

INFRASTRUCTURE = _blocks(
    "InfrastructureElement",
    [
        ("Data center Rosenheim", "The company's own data center at the plant", None, {}),
        ("VMware cluster Rosenheim", "", "Data center Rosenheim", {}),
        ("Storage Rosenheim", "", "Data center Rosenheim", {}),
        ("Azure West Europe", "Cloud subscription of Alpenrad", None, {}),
        ("AKS cluster production", "", "Azure West Europe", {}),
        ("Azure Database for PostgreSQL", "", "Azure West Europe", {}),
        ("Plant network", "Shop-floor network of the plant", None, {}),
        ("Office network", "", None, {}),
    ],
    "anna",
)


def _component(
    name: str,
    version: str,
    status: str,
    period: tuple[str | None, str | None],
    costs: int,
    domains: tuple[str, ...],
    infrastructure: tuple[str, ...],
    tags: tuple[str, ...] = (),
    base: tuple[str, ...] = (),
) -> Block:
    return Block(
        "TechnicalComponent",
        name,
        values={
            "version": version,
            "status": status,
            "runtimePeriod": {"start": period[0], "end": period[1]},
            "Annual costs": costs,
            "Responsible": "anna",
            "Tags": tags,
        },
        ends={
            "architecturalDomains": domains,
            "infrastructureElements": infrastructure,
            "baseComponents": base,
        },
    )


TECHNICAL_COMPONENTS = [
    _component("SAP HANA", "2.0 SPS07", "CURRENT", ("2025-01-01", None), 180_000, ("Platforms",), ("VMware cluster Rosenheim",)),
    _component("Oracle Database", "19c", "CURRENT", ("2019-05-01", "2027-12-31"), 95_000, ("Platforms",), ("VMware cluster Rosenheim",), ("legacy",)),
    _component("PostgreSQL", "16", "CURRENT", ("2024-02-01", None), 4_000, ("Platforms",), ("Azure Database for PostgreSQL",), ("cloud",)),
    _component("Microsoft SQL Server", "2019", "CURRENT", ("2020-03-01", "2029-12-31"), 38_000, ("Platforms",), ("VMware cluster Rosenheim",)),
    _component("Java runtime", "17", "CURRENT", ("2022-01-01", "2029-09-30"), 0, ("Platforms",), ()),
    _component("Java runtime 8", "8u402", "INACTIVE", ("2015-01-01", "2024-12-31"), 0, ("Platforms",), (), ("legacy",)),
    _component("Apache Tomcat", "10.1", "CURRENT", ("2023-06-01", None), 0, ("Platforms",), ("VMware cluster Rosenheim",), (), ("Java runtime",)),
    _component("Kubernetes (AKS)", "1.29", "CURRENT", ("2024-01-15", None), 60_000, ("Platforms",), ("AKS cluster production",), ("cloud",)),
    _component("Apache Kafka", "3.7", "CURRENT", ("2024-04-01", None), 25_000, ("Integration",), ("AKS cluster production",), ("cloud",), ("Java runtime",)),
    _component("SAP Integration Suite", "2024", "PLANNED", ("2026-01-01", None), 70_000, ("Integration",), (), ("cloud",)),
    _component("Keycloak", "24", "CURRENT", ("2024-03-01", None), 8_000, ("Security",), ("AKS cluster production",), ("cloud",), ("Java runtime",)),
    _component("Nginx", "1.24", "CURRENT", ("2023-01-01", None), 0, ("Platforms",), ("AKS cluster production",)),
    _component("Power BI", "2024", "CURRENT", ("2021-09-01", None), 30_000, ("Data and analytics",), (), ("cloud",)),
    _component("Windows Server", "2012 R2", "UNDEFINED", ("2013-01-01", None), 12_000, ("Platforms",), ("VMware cluster Rosenheim",), ("legacy",)),
]  # fmt: skip

IT_SERVICES = _blocks(
    "ItService",
    [
        ("Email and collaboration", "", None, {}),
        ("Identity and access", "Single sign-on for employees, dealers and customers", None, {}),
        ("Backup and restore", "", None, {}),
        ("Service desk", "", None, {}),
        ("Application hosting", "", None, {}),
    ],
    "anna",
)

INFORMATION_SYSTEM_DOMAINS = _blocks(
    "InformationSystemDomain",
    [
        ("Customer and sales systems", "", None, {}),
        ("Product and production systems", "", None, {}),
        ("Logistics systems", "", None, {}),
        ("Finance and HR systems", "", None, {}),
        ("Data and analytics systems", "", None, {}),
        ("Workplace and platform systems", "", None, {}),
    ],
    "anna",
)

PROJECTS = [
    Block(
        "Project",
        "S/4HANA migration",
        "Replace the R/3 system by S/4HANA; finance first, then logistics and production",
        values={"runtimePeriod": {"start": "2024-01-01", "end": "2026-12-31"}, "Responsible": "bernd", "Tags": ("strategic",)},
        ends={"technicalComponents": ("SAP HANA", "SAP Integration Suite"), "businessObjects": ("Product master", "Bill of materials")},
    ),
    Block(
        "Project",
        "CRM renewal",
        "Move sales and service to one cloud CRM",
        values={"runtimePeriod": {"start": "2026-04-01", "end": "2027-06-30"}, "Responsible": "bernd", "Tags": ("customer-facing", "cloud")},
        ends={"businessObjects": ("Customer",), "itServices": ("Identity and access",)},
    ),
]  # fmt: skip


@dataclass(frozen=True)
class System:
    """An information system: the built-ins, the demo attributes, and relations by end name."""

    name: str
    version: str
    status: str
    period: tuple[str | None, str | None]
    criticality: str
    costs: int
    go_live: str | None
    domain: str
    description: str = ""
    responsible: str = "anna"
    tags: tuple[str, ...] = ()
    ends: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def block(self) -> Block:
        return Block(
            "InformationSystem",
            self.name,
            self.description,
            values={
                "version": self.version,
                "status": self.status,
                "runtimePeriod": {"start": self.period[0], "end": self.period[1]},
                "Criticality": self.criticality,
                "Annual costs": self.costs,
                "Go-live": self.go_live,
                "Responsible": self.responsible,
                "Tags": self.tags,
            },
            ends={"informationSystemDomains": (self.domain,), **self.ends},
        )


_SYSTEMS = (
    System("Legacy ERP", "SAP R/3 4.7", "INACTIVE", ("2004-01-05", "2025-06-30"), "high", 40_000, "2004-01-05",
           "Finance and HR systems", "Read-only archive of the former ERP", tags=("legacy",),
           ends={"technicalComponents": ("Oracle Database",), "projects": ("S/4HANA migration",)}),
    System("ERP", "S/4HANA 2023", "CURRENT", ("2025-07-01", None), "high", 850_000, "2025-07-01",
           "Finance and HR systems", "Finance, sales orders, purchasing and production planning", "bernd",
           ("strategic", "regulated"),
           {"predecessors": ("Legacy ERP",), "technicalComponents": ("SAP HANA",),
            "infrastructureElements": ("VMware cluster Rosenheim",), "projects": ("S/4HANA migration",),
            "businessProcesses": ("Order handling", "Order entry", "Credit check", "Order confirmation", "Invoicing", "Dunning",
                                  "Purchase ordering", "Supplier payment", "Material requirements planning",
                                  "Accounting", "Controlling"),
            "businessFunctions": ("Order management", "Procurement", "Accounting", "Controlling"),
            "businessObjects": ("Sales order", "Purchase order", "Invoice", "Payment", "Product master"),
            "businessUnits": ("Finance and Controlling", "Sales Germany", "Plant Rosenheim"),
            "businessDomains": ("Finance", "Supply chain"), "architecturalDomains": ("Business applications",),
            "itServices": ("Application hosting", "Backup and restore")}),
    System("Payment Gateway", "3.2", "CURRENT", ("2021-03-01", None), "high", 45_000, "2021-03-01",
           "Customer and sales systems", "Card, PayPal and instalment payments of the shop", tags=("cloud", "regulated"),
           ends={"businessObjects": ("Payment",), "businessProcesses": ("Credit check",)}),
    System("Online Shop", "5.4", "CURRENT", ("2019-10-01", None), "high", 210_000, "2019-10-15",
           "Customer and sales systems", "Consumer shop for bikes and parts", "bernd", ("customer-facing", "cloud"),
           {"baseComponents": ("Payment Gateway",), "technicalComponents": ("Kubernetes (AKS)", "PostgreSQL", "Nginx"),
            "infrastructureElements": ("AKS cluster production",), "businessProcesses": ("Order entry",),
            "products": ("City bikes", "E-bikes", "Mountain bikes", "Spare parts and service"),
            "businessUnits": ("Sales Germany",), "businessDomains": ("Sales and service",)}),
    System("Dealer Portal", "2.8", "CURRENT", ("2018-04-01", None), "high", 120_000, "2018-04-09",
           "Customer and sales systems", "Orders, availability and warranty claims of dealers", "bernd", ("customer-facing",),
           {"technicalComponents": ("Apache Tomcat", "Microsoft SQL Server"), "businessProcesses": ("Order entry",),
            "businessUnits": ("Sales Germany", "Sales International"), "businessDomains": ("Sales and service",)}),
    System("CRM", "2019.2", "CURRENT", ("2016-02-01", "2027-06-30"), "medium", 160_000, "2016-02-01",
           "Customer and sales systems", "Dealer accounts, leads and campaigns", "bernd", ("legacy",),
           {"technicalComponents": ("Microsoft SQL Server", "Windows Server"), "projects": ("CRM renewal",),
            "businessFunctions": ("Customer management", "Marketing"), "businessObjects": ("Customer",),
            "businessUnits": ("Sales Germany", "Sales International")}),
    System("CRM Cloud", "Spring '26", "PLANNED", ("2026-10-01", None), "high", 240_000, "2026-10-01",
           "Customer and sales systems", "Successor of the CRM for sales and service", "bernd", ("cloud", "strategic"),
           {"predecessors": ("CRM",), "projects": ("CRM renewal",), "businessObjects": ("Customer",),
            "itServices": ("Identity and access",)}),
    System("Service Desk", "9.1", "CURRENT", ("2020-01-01", None), "medium", 55_000, "2020-01-13",
           "Customer and sales systems", "Customer hotline, warranty and repair tickets", tags=("customer-facing",),
           ends={"businessFunctions": ("Customer service",), "businessUnits": ("Customer Service",),
                 "products": ("Spare parts and service",)}),
    System("Newsletter", "4", "CURRENT", ("2022-05-01", None), "low", 9_000, "2022-05-02",
           "Customer and sales systems", "Mail campaigns to consumers", tags=("cloud", "customer-facing"),
           ends={"businessFunctions": ("Marketing",)}),
    System("PIM", "11.0", "CURRENT", ("2021-01-01", None), "medium", 70_000, "2021-02-01",
           "Product and production systems", "Product information for shop, dealers and catalogues",
           ends={"technicalComponents": ("PostgreSQL",), "businessObjects": ("Product master",),
                 "businessFunctions": ("Product data management",)}),
    System("PLM", "2022", "CURRENT", ("2017-06-01", None), "medium", 130_000, "2017-06-19",
           "Product and production systems", "Product lifecycle: designs, variants, bills of materials",
           ends={"technicalComponents": ("Oracle Database",), "businessProcesses": ("Product design", "Product release"),
                 "businessObjects": ("Bill of materials",), "businessFunctions": ("Product development",)}),
    System("CAD Vault", "2024", "CURRENT", ("2015-03-01", None), "low", 35_000, "2015-03-02",
           "Product and production systems", "Drawings and 3D models of frames and parts",
           ends={"technicalComponents": ("Microsoft SQL Server", "Windows Server"), "businessProcesses": ("Product design",)}),
    System("MES", "7.3", "CURRENT", ("2018-09-01", None), "high", 190_000, "2018-09-03",
           "Product and production systems", "Manufacturing execution on the shop floor", tags=("regulated",),
           ends={"technicalComponents": ("Microsoft SQL Server",), "infrastructureElements": ("Plant network",),
                 "businessProcesses": ("Frame welding", "Assembly"), "businessUnits": ("Plant Rosenheim",),
                 "businessObjects": ("Production order",), "businessFunctions": ("Production planning and control",)}),
    System("Quality Inspection", "3.0", "CURRENT", ("2020-04-01", None), "high", 42_000, "2020-04-06",
           "Product and production systems", "Test benches and inspection records", tags=("regulated",),
           ends={"baseComponents": ("MES",), "businessProcesses": ("Final inspection", "Incoming inspection"),
                 "businessFunctions": ("Quality management",)}),
    System("APS", "2.1", "PLANNED", ("2026-09-01", None), "medium", 80_000, "2026-09-01",
           "Product and production systems", "Advanced planning and scheduling of the plant",
           ends={"businessProcesses": ("Capacity planning",), "businessUnits": ("Plant Rosenheim",)}),
    System("WMS", "8.2", "CURRENT", ("2019-01-01", None), "high", 110_000, "2019-01-07",
           "Logistics systems", "Warehouse management of the logistics center",
           ends={"technicalComponents": ("Oracle Database",), "businessProcesses": ("Picking and packing", "Warehousing"),
                 "businessUnits": ("Logistics Center Kiefersfelden",), "businessFunctions": ("Warehouse management",)}),
    System("TMS", "5.0", "CURRENT", ("2021-06-01", None), "medium", 48_000, "2021-06-07",
           "Logistics systems", "Carrier booking, labels and tracking", tags=("cloud",),
           ends={"businessProcesses": ("Shipping",), "businessObjects": ("Shipment",),
                 "businessFunctions": ("Transport management",)}),
    System("Supplier Portal", "1.4", "CURRENT", ("2022-02-01", None), "medium", 36_000, "2022-02-14",
           "Logistics systems", "Order confirmations and delivery notes from suppliers", tags=("cloud",),
           ends={"businessProcesses": ("Purchase ordering",), "businessObjects": ("Supplier", "Purchase order")}),
    System("EDI Hub", "6.5", "CURRENT", ("2016-01-01", None), "high", 52_000, "2016-01-11",
           "Logistics systems", "EDIFACT and XML messages with dealers, suppliers and carriers",
           ends={"technicalComponents": ("Java runtime",), "architecturalDomains": ("Integration",)}),
    System("E-Invoicing", "2.0", "CURRENT", ("2025-01-01", None), "high", 18_000, "2025-01-01",
           "Finance and HR systems", "XRechnung and ZUGFeRD invoices to and from business partners", tags=("regulated",),
           ends={"businessProcesses": ("Invoicing",), "businessObjects": ("Invoice",)}),
    System("Treasury", "12", "CURRENT", ("2020-07-01", None), "medium", 64_000, "2020-07-01",
           "Finance and HR systems", "Cash management and payment runs", tags=("regulated",),
           ends={"businessProcesses": ("Supplier payment",), "businessObjects": ("Payment",),
                 "businessUnits": ("Finance and Controlling",)}),
    System("HR Core", "2024.1", "CURRENT", ("2019-01-01", None), "medium", 88_000, "2019-01-02",
           "Finance and HR systems", "Employee master data and organisation", tags=("cloud", "regulated"),
           ends={"businessObjects": ("Employee",), "businessUnits": ("Human Resources",),
                 "businessFunctions": ("Human resources management",)}),
    System("Payroll", "2024.1", "CURRENT", ("2019-01-01", None), "high", 72_000, "2019-01-02",
           "Finance and HR systems", "Monthly payroll for Germany and Austria", tags=("regulated",),
           ends={"baseComponents": ("HR Core",), "businessProcesses": ("Payroll",), "businessFunctions": ("Payroll",)}),
    System("Recruiting", "3", "CURRENT", ("2023-03-01", None), "low", 15_000, "2023-03-01",
           "Finance and HR systems", "Job ads and applicant tracking", tags=("cloud",),
           ends={"businessProcesses": ("Recruiting",), "businessFunctions": ("Talent acquisition",)}),
    System("Time Tracking", "6.2", "CURRENT", ("2017-01-01", None), "medium", 21_000, "2017-01-02",
           "Finance and HR systems", "Working hours of the plant and the warehouse",
           ends={"technicalComponents": ("Windows Server",), "businessUnits": ("Plant Rosenheim",)}),
    System("Data Warehouse", "3.1", "CURRENT", ("2018-01-01", "2027-12-31"), "medium", 95_000, "2018-01-15",
           "Data and analytics systems", "Sales, production and finance figures for reporting", tags=("legacy",),
           ends={"technicalComponents": ("Microsoft SQL Server",), "architecturalDomains": ("Data and analytics",),
                 "businessProcesses": ("Controlling", "Financial reporting")}),
    System("Data Platform", "1.0", "TARGET", ("2027-01-01", None), "medium", 150_000, None,
           "Data and analytics systems", "Cloud lakehouse that replaces the data warehouse", tags=("cloud", "strategic"),
           ends={"predecessors": ("Data Warehouse",), "technicalComponents": ("Kubernetes (AKS)",),
                 "architecturalDomains": ("Data and analytics",)}),
    System("BI Reporting", "2024", "CURRENT", ("2021-09-01", None), "medium", 30_000, "2021-09-13",
           "Data and analytics systems", "Dashboards on top of the data warehouse", tags=("cloud",),
           ends={"baseComponents": ("Data Warehouse",), "technicalComponents": ("Power BI",),
                 "businessProcesses": ("Financial reporting",)}),
    System("Identity Management", "24", "CURRENT", ("2024-03-01", None), "high", 20_000, "2024-03-04",
           "Workplace and platform systems", "Logins of employees, dealers and shop customers", tags=("cloud",),
           ends={"technicalComponents": ("Keycloak",), "itServices": ("Identity and access",),
                 "architecturalDomains": ("Security",)}),
    System("Intranet", "2023", "CURRENT", ("2014-05-01", None), "low", 12_000, "2014-05-05",
           "Workplace and platform systems", "News, handbooks and forms for employees",
           ends={"itServices": ("Email and collaboration",)}),
    System("Document Management", "21.4", "CURRENT", ("2016-09-01", None), "medium", 40_000, "2016-09-05",
           "Workplace and platform systems", "Contracts, delivery notes and archived invoices", tags=("regulated",),
           ends={"technicalComponents": ("Oracle Database",), "businessObjects": ("Invoice",)}),
)  # fmt: skip
INFORMATION_SYSTEMS = [system.block() for system in _SYSTEMS]


def _flow(
    name: str,
    source: str,
    target: str,
    objects: tuple[str, ...],
    components: tuple[str, ...] = (),
    description: str = "",
) -> Block:
    return Block(
        "InformationFlow",
        name,
        description,
        values={"Responsible": "anna"},
        ends={
            "sourceSystem": (source,),
            "targetSystem": (target,),
            "businessObjects": objects,
            "technicalComponents": components,
        },
    )


INFORMATION_FLOWS = [
    _flow("Shop orders", "Online Shop", "ERP", ("Sales order",), ("Apache Kafka",), "Every order, seconds after checkout"),
    _flow("Shop payments", "Payment Gateway", "ERP", ("Payment",), ("Apache Kafka",)),
    _flow("Dealer orders", "Dealer Portal", "ERP", ("Sales order",)),
    _flow("Product data to shop", "PIM", "Online Shop", ("Product master",)),
    _flow("Product data to dealers", "PIM", "Dealer Portal", ("Product master",)),
    _flow("Released bills of materials", "PLM", "ERP", ("Bill of materials",), ("SAP Integration Suite",)),
    _flow("Released models", "PLM", "PIM", ("Product master",)),
    _flow("Production orders", "ERP", "MES", ("Production order",)),
    _flow("Production confirmations", "MES", "ERP", ("Production order",)),
    _flow("Inspection results", "Quality Inspection", "MES", ("Production order",)),
    _flow("Delivery orders", "ERP", "WMS", ("Sales order", "Shipment")),
    _flow("Shipments to carriers", "WMS", "TMS", ("Shipment",)),
    _flow("Purchase orders to suppliers", "ERP", "Supplier Portal", ("Purchase order",)),
    _flow("Dealer EDI orders", "EDI Hub", "ERP", ("Sales order",)),
    _flow("Outgoing e-invoices", "ERP", "E-Invoicing", ("Invoice",)),
    _flow("Payment runs", "ERP", "Treasury", ("Payment",)),
    _flow("Employees to payroll", "HR Core", "Payroll", ("Employee",)),
    _flow("Payroll postings", "Payroll", "ERP", ("Payment",)),
    _flow("Customer master to CRM", "ERP", "CRM", ("Customer",)),
    _flow("Finance figures", "ERP", "Data Warehouse", ("Invoice", "Payment")),
    _flow("Production figures", "MES", "Data Warehouse", ("Production order",)),
]  # fmt: skip

ELEMENTS: tuple[Block, ...] = (
    *BUSINESS_DOMAINS,
    *BUSINESS_PROCESSES,
    *BUSINESS_UNITS,
    *PRODUCTS,
    *BUSINESS_OBJECTS,
    *BUSINESS_FUNCTIONS,
    *ARCHITECTURAL_DOMAINS,
    *INFRASTRUCTURE,
    *TECHNICAL_COMPONENTS,
    *IT_SERVICES,
    *INFORMATION_SYSTEM_DOMAINS,
    *PROJECTS,
    *INFORMATION_SYSTEMS,
    *INFORMATION_FLOWS,
)
EXAMPLE_PROCESS = "Order handling"
